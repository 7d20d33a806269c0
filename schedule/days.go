package schedule

// dayRules holds a spec's Quartz day items, which robfig does not know:
// L, L-N, LW, L-NW and NW in the day-of-month field, DOW#N and DOWL in the
// day-of-week field. Each selects at most one day of a given month, so a
// month's matches are computed as a bit set (bit d is day d).
type dayRules struct {
	dom []domItem
	dow []dowItem
	// onlyDom and onlyDow mark a day field with no standard item: robfig
	// read a stand-in "*" for it, whose bits are not the field's.
	onlyDom, onlyDow bool
}

// domItem selects a day counted back from the month's last (L-N) or a
// given day (N), moved to the nearest weekday in the month when weekday is
// set (W).
type domItem struct {
	fromEnd bool
	n       int // day (1-31), or days back from the last (0-30)
	weekday bool
}

// dowItem selects the nth given weekday of the month (DOW#N), or the
// last one (DOWL) when nth is 0.
type dowItem struct {
	day int // 0 = Sunday ... 6 = Saturday
	nth int // 1-5, or 0 for the last
}

// inMonth returns the days of the month that the day-of-month items and
// the day-of-week items select.
func (r *dayRules) inMonth(year, month int) (dom, dow uint64) {
	last, first := monthShape(year, month)
	for _, it := range r.dom {
		dom |= it.pick(last, first)
	}
	for _, it := range r.dow {
		dow |= it.pick(last, first)
	}
	return dom, dow
}

// pick returns the day the item picks in a month of last days whose 1st
// falls on weekday first, as a bit set (empty when there is none).
func (it domItem) pick(last, first int) uint64 {
	d := it.n
	if it.fromEnd {
		d = last - it.n
	}
	if d < 1 || d > last {
		return 0
	}
	if it.weekday {
		d = nearestWeekday(d, last, first)
	}
	return 1 << uint(d)
}

// nearestWeekday moves day d to the nearest Monday-Friday without leaving
// the month: a Saturday goes to Friday (Monday the 3rd for the 1st), a
// Sunday to Monday (Friday for the last day).
func nearestWeekday(d, last, first int) int {
	switch (first + d - 1) % 7 {
	case 6: // Saturday
		if d == 1 {
			return 3
		}
		return d - 1
	case 0: // Sunday
		if d == last {
			return d - 2
		}
		return d + 1
	}
	return d
}

func (it dowItem) pick(last, first int) uint64 {
	d := 1 + (it.day-first+7)%7 // the first such day
	if it.nth == 0 {
		d += (last - d) / 7 * 7
	} else {
		d += 7 * (it.nth - 1)
	}
	if d > last {
		return 0
	}
	return 1 << uint(d)
}

// monthShape returns the number of days of a month and the weekday of its
// 1st (0 = Sunday), by arithmetic: this runs for every day Next looks at.
func monthShape(year, month int) (last, first int) {
	last = 31
	switch month {
	case 4, 6, 9, 11:
		last = 30
	case 2:
		last = 28
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			last = 29
		}
	}
	first = int((daysFromCivil(year, month, 1)%7 + 7 + 4) % 7) // 1970-01-01 was a Thursday
	return last, first
}

// daysFromCivil counts days from 1970-01-01 to the given proleptic
// Gregorian date (Howard Hinnant's days_from_civil).
func daysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era--
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era)*146097 + int64(doe) - 719468
}
