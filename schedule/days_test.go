package schedule

import (
	"testing"
	"time"
)

// TestQuartzDayVectors replays the day extensions' vectors of Quartz's and
// cron-utils' own test suites. Quartz numbers the days of the week 1
// (Sunday) to 7 (Saturday); raftcron uses cron's 0 (or 7) to 6, so
// Quartz's 6L (last Friday) is 5L here and its 2#4 (fourth Monday) is 1#4.
// Quartz's seven fields (seconds first, an optional year last) become six
// without the year, its "?" staying as robfig's synonym for "*".
//
// Sources:
//
//	QZ  quartz-scheduler/quartz quartz-core/src/test/java/org/quartz/CronExpressionTest.java
//	    (testLastDayOffset, testQtz96, testQuartz640)
//	CU  jmrozanec/cron-utils src/test/java/com/cronutils/model/time/generator/
//	    OnDayOfMonthValueGeneratorLTest.java, OnDayOfMonthValueGeneratorLWTest.java,
//	    OnDayOfMonthValueGeneratorWTest.java, OnDayOfWeekValueGeneratorLTest.java,
//	    OnDayOfWeekValueGeneratorHashTest.java
//	CI  jmrozanec/cron-utils src/test/java/com/cronutils/model/time/ExecutionTimeQuartzIntegrationTest.java
//	    (testCronWithFirstWorkDayOfWeek, testLastExecutionIssue424),
//	    src/test/java/com/cronutils/Issue143Test.java, src/test/java/com/cronutils/Issue388Test.java
func TestQuartzDayVectors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, spec, after string
		want              []string
	}{
		// QZ testLastDayOffset: "0 15 10 L-2 * ? 2010" fires on 2010-10-29, not the 28th.
		{"QZ L-2", "0 15 10 L-2 * ?", "2010-10-01T00:00:00Z", []string{"2010-10-29T10:15:00Z", "2010-11-28T10:15:00Z"}},
		// QZ: "L-5W": the 26th (last day - 5) is a Tuesday.
		{"QZ L-5W", "0 15 10 L-5W * ?", "2010-10-01T00:00:00Z", []string{"2010-10-26T10:15:00Z"}},
		// QZ: "L-1" is the 30th.
		{"QZ L-1", "0 15 10 L-1 * ?", "2010-10-01T00:00:00Z", []string{"2010-10-30T10:15:00Z"}},
		// QZ: "L-1W": the 30th is a Saturday, so Friday the 29th.
		{"QZ L-1W", "0 15 10 L-1W * ?", "2010-10-01T00:00:00Z", []string{"2010-10-29T10:15:00Z"}},
		// QZ testQuartz640: "0 43 9 ? * 5L" parses (Quartz's Thursday; 4L here).
		{"QZ 5L (Quartz) is 4L", "0 43 9 ? * 4L", "2010-10-01T00:00:00Z", []string{"2010-10-28T09:43:00Z"}},
		// CU OnDayOfMonthValueGeneratorLTest: L of February 2015 is the 28th.
		{"CU L", "0 0 0 L * ?", "2015-02-01T00:00:00Z", []string{"2015-02-28T00:00:00Z", "2015-03-31T00:00:00Z"}},
		// CU OnDayOfMonthValueGeneratorLWTest (2015): May ends on a Sunday (29th),
		// February on a Saturday (27th), August on a Friday (31st).
		{"CU LW", "0 0 0 LW * ?", "2015-02-01T00:00:00Z",
			[]string{"2015-02-27T00:00:00Z", "2015-03-31T00:00:00Z", "2015-04-30T00:00:00Z", "2015-05-29T00:00:00Z"}},
		{"CU LW Friday", "0 0 0 LW 8 ?", "2015-01-01T00:00:00Z", []string{"2015-08-31T00:00:00Z"}},
		// CU OnDayOfMonthValueGeneratorWTest (2015): 15W in February is Monday
		// the 16th, 7W Friday the 6th, 1W in August (a Saturday) Monday the 3rd.
		{"CU 15W", "0 0 0 15W 2 ?", "2015-01-01T00:00:00Z", []string{"2015-02-16T00:00:00Z"}},
		{"CU 7W", "0 0 0 7W 2 ?", "2015-01-01T00:00:00Z", []string{"2015-02-06T00:00:00Z"}},
		{"CU 1W", "0 0 0 1W 8 ?", "2015-01-01T00:00:00Z", []string{"2015-08-03T00:00:00Z"}},
		// CU OnDayOfWeekValueGeneratorLTest (2015): Quartz 6L, the last Friday,
		// is the 27th of February and of March, the 31st of July.
		{"CU 6L (Quartz) is 5L", "0 0 0 ? * 5L", "2015-02-01T00:00:00Z",
			[]string{"2015-02-27T00:00:00Z", "2015-03-27T00:00:00Z", "2015-04-24T00:00:00Z"}},
		{"CU 6L in July", "0 0 0 ? 7 friL", "2015-01-01T00:00:00Z", []string{"2015-07-31T00:00:00Z"}},
		// CU OnDayOfWeekValueGeneratorHashTest (2015): Quartz 2#4 (fourth
		// Monday of May) is the 25th, 6#4 (fourth Friday of February) the
		// 27th, 1#3 (third Sunday of February) the 15th.
		{"CU 2#4 (Quartz) is 1#4", "0 0 0 ? 5 1#4", "2015-01-01T00:00:00Z", []string{"2015-05-25T00:00:00Z"}},
		{"CU 6#4 (Quartz) is 5#4", "0 0 0 ? 2 5#4", "2015-01-01T00:00:00Z", []string{"2015-02-27T00:00:00Z"}},
		{"CU 1#3 (Quartz) is 0#3", "0 0 0 ? 2 0#3", "2015-01-01T00:00:00Z", []string{"2015-02-15T00:00:00Z"}},
		{"CU 1#3 (Quartz) is 7#3", "0 0 0 ? 2 7#3", "2015-01-01T00:00:00Z", []string{"2015-02-15T00:00:00Z"}},
		// CI testCronWithFirstWorkDayOfWeek: "0 0 12 1W * ? *" after 2016-03-29 is Friday April 1st.
		{"CI 1W", "0 0 12 1W * ?", "2016-03-29T00:00:59Z", []string{"2016-04-01T12:00:00Z", "2016-05-02T12:00:00Z"}},
		// CI testLastExecutionIssue424: "0 0 12 ? * SUN#4 2020", the fourth Sunday of every month.
		{"CI SUN#4", "0 0 12 ? * SUN#4", "2019-12-31T00:00:00Z", []string{
			"2020-01-26T12:00:00Z", "2020-02-23T12:00:00Z", "2020-03-22T12:00:00Z", "2020-04-26T12:00:00Z",
			"2020-05-24T12:00:00Z", "2020-06-28T12:00:00Z", "2020-07-26T12:00:00Z", "2020-08-23T12:00:00Z",
			"2020-09-27T12:00:00Z", "2020-10-25T12:00:00Z", "2020-11-22T12:00:00Z", "2020-12-27T12:00:00Z"}},
		// CI Issue143Test: "0 0 12 ? 12 SAT#5 *" last fired 2012-12-29; the next
		// December with five Saturdays is 2016's.
		{"CI SAT#5 in December", "0 0 12 ? 12 SAT#5", "2012-12-01T00:00:00Z",
			[]string{"2012-12-29T12:00:00Z", "2016-12-31T12:00:00Z"}},
		// CI Issue143Test: "0 0 12 ? 1/1 SAT#5 *" fired last on 2016-10-29 before 2016-12-20.
		{"CI SAT#5 monthly", "0 0 12 ? 1/1 SAT#5", "2016-09-30T00:00:00Z",
			[]string{"2016-10-29T12:00:00Z", "2016-12-31T12:00:00Z"}},
		// CI Issue388Test: "0 0 8 ? * SAT#1" from 2019-07-01 08:00 is July 6th.
		{"CI SAT#1", "0 0 8 ? * SAT#1", "2019-07-01T08:00:00Z", []string{"2019-07-06T08:00:00Z", "2019-08-03T08:00:00Z"}},
		{"CI SAT#1 June", "0 0 8 ? * sat#1", "2019-05-31T00:00:00Z", []string{"2019-06-01T08:00:00Z"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assertSequence(t, mustParse(t, tc.spec, time.UTC), tc.after, tc.want)
		})
	}
}

// QZ testQtz259 and testQtz259LW: successive fire times of L-2 and LW never
// repeat.
func TestQuartzLastDayNeverRepeats(t *testing.T) {
	t.Parallel()
	for _, spec := range []string{"0 0 0 L-2 * ?", "0 0 0 LW * ?"} {
		s := mustParse(t, spec, time.UTC)
		prev := mustTime(t, "2026-01-01T00:00:00Z")
		for i := range 26 {
			next := s.Next(prev)
			if !next.After(prev) {
				t.Fatalf("%q step %d: Next(%s) = %s", spec, i, prev, next)
			}
			prev = next
		}
	}
}

// TestDayItems covers each item's own rule, including the edges of the
// month that W never crosses, lists, lower case and names.
func TestDayItems(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, spec, after string
		want              []string
	}{
		{"L follows the month's length", "0 0 L * *", "2028-01-15T00:00:00Z",
			[]string{"2028-01-31T00:00:00Z", "2028-02-29T00:00:00Z", "2028-03-31T00:00:00Z", "2028-04-30T00:00:00Z"}},
		{"L-30 is the 1st of a 31-day month only", "0 0 L-30 * *", "2026-01-15T00:00:00Z",
			[]string{"2026-03-01T00:00:00Z", "2026-05-01T00:00:00Z"}},
		{"L-0 is L", "0 0 L-0 2 *", "2026-01-01T00:00:00Z", []string{"2026-02-28T00:00:00Z"}},
		{"1W on a Saturday is Monday the 3rd", "0 0 1W * *", "2026-07-15T00:00:00Z", // 2026-08-01 is a Saturday
			[]string{"2026-08-03T00:00:00Z"}},
		{"1W on a Sunday is Monday the 2nd", "0 0 1W * *", "2026-02-15T00:00:00Z", // 2026-03-01 is a Sunday
			[]string{"2026-03-02T00:00:00Z"}},
		{"31W on a Sunday is Friday the 29th", "0 0 31W * *", "2026-05-01T00:00:00Z", // 2026-05-31 is a Sunday
			[]string{"2026-05-29T00:00:00Z"}},
		{"31W on a Saturday is Friday the 30th", "0 0 31W * *", "2026-01-01T00:00:00Z", // 2026-01-31 is a Saturday
			[]string{"2026-01-30T00:00:00Z", "2026-03-31T00:00:00Z"}},
		{"31W skips months without a 31st", "0 0 31W * *", "2026-03-31T00:00:00Z",
			[]string{"2026-05-29T00:00:00Z", "2026-07-31T00:00:00Z"}},
		{"LW when the month ends on a Sunday", "0 0 LW * *", "2026-05-01T00:00:00Z",
			[]string{"2026-05-29T00:00:00Z"}},
		{"5#5 fires only in months with five Fridays", "0 0 * * 5#5", "2026-01-01T00:00:00Z",
			[]string{"2026-01-30T00:00:00Z", "2026-05-29T00:00:00Z", "2026-07-31T00:00:00Z"}},
		{"names, lower case, 7 for Sunday", "0 0 * * fril,7l,Mon#1", "2026-05-01T00:00:00Z",
			[]string{"2026-05-04T00:00:00Z", "2026-05-29T00:00:00Z", "2026-05-31T00:00:00Z", "2026-06-01T00:00:00Z"}},
		{"a list mixes items and days", "0 9 1,15,L * *", "2026-02-01T10:00:00Z",
			[]string{"2026-02-15T09:00:00Z", "2026-02-28T09:00:00Z", "2026-03-01T09:00:00Z"}},
		{"a list mixes items and weekdays", "0 9 * * mon,fri#2", "2026-05-03T00:00:00Z",
			[]string{"2026-05-04T09:00:00Z", "2026-05-08T09:00:00Z", "2026-05-11T09:00:00Z"}},
		// cronie's rule, unchanged by the items: both day fields restricted, either matches.
		{"L or every Friday", "0 0 L * 5", "2026-05-25T00:00:00Z",
			[]string{"2026-05-29T00:00:00Z", "2026-05-31T00:00:00Z", "2026-06-05T00:00:00Z"}},
		{"the 13th or the last Friday", "0 0 13 * 5L", "2026-05-01T00:00:00Z",
			[]string{"2026-05-13T00:00:00Z", "2026-05-29T00:00:00Z", "2026-06-13T00:00:00Z", "2026-06-26T00:00:00Z"}},
		// A leading * or ? in the other field makes both apply.
		{"odd days that are a last Friday", "0 0 */2 * 5L", "2026-01-01T00:00:00Z",
			[]string{"2026-02-27T00:00:00Z", "2026-03-27T00:00:00Z", "2026-05-29T00:00:00Z"}},
		{"? leaves the other field alone", "0 0 ? * 5L", "2026-05-01T00:00:00Z", []string{"2026-05-29T00:00:00Z"}},
		{"seconds field", "30 0 0 LW * *", "2026-05-01T00:00:00Z", []string{"2026-05-29T00:00:30Z"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assertSequence(t, mustParse(t, tc.spec, time.UTC), tc.after, tc.want)
		})
	}
}
