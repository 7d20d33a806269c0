// Formatting of what the JSON API returns: enums, times in a job's zone,
// schedules in words. Job specs need none: the API gives them in the job
// file's JSON form already.

// enumWord turns "RUN_STATE_DEADLINE_EXCEEDED" into "deadline exceeded".
export function enumWord(value, prefix) {
  if (!value) return '';
  let v = String(value);
  if (prefix && v.startsWith(prefix)) v = v.slice(prefix.length);
  return v.toLowerCase().replaceAll('_', ' ');
}

export const stateWord = (s) => enumWord(s || 'RUN_STATE_UNSPECIFIED', 'RUN_STATE_');
export const kindWord = (k) => enumWord(k || 'FIRE_KIND_UNSPECIFIED', 'FIRE_KIND_');

// Run states by what an operator does about them.
const openStates = new Set(['RUN_STATE_DISPATCHED', 'RUN_STATE_RETRYING']);
const badStates = new Set(['RUN_STATE_FAILED', 'RUN_STATE_FENCED', 'RUN_STATE_DEADLINE_EXCEEDED', 'RUN_STATE_UNKNOWN']);

export const isOpen = (run) => openStates.has(run.state);
// notRun: a slot given up without dispatch, missed or skipped by a rule.
export const notRun = (run) => run.state === 'RUN_STATE_MISSED' || run.state === 'RUN_STATE_SKIPPED';
export const isFailure = (state) => badStates.has(state);

// stateTone is the colour class of a run state.
export function stateTone(state) {
  if (state === 'RUN_STATE_SUCCEEDED') return 'ok';
  if (badStates.has(state)) return 'bad';
  if (openStates.has(state)) return 'busy';
  return 'quiet';
}

// lastAttempt is the run's current attempt, the one with the largest number.
export function lastAttempt(run) {
  const a = run.attempts || [];
  return a.length ? a[a.length - 1] : null;
}

export const unixDate = (sec) => new Date(Number(sec) * 1000);
export const nanoDate = (ns) => new Date(Number(BigInt(ns || 0) / 1000000n));
export const hasNano = (ns) => ns !== undefined && ns !== null && ns !== '0' && ns !== 0;

const pad = (n) => String(n).padStart(2, '0');

function zoneParts(date, zone) {
  // en-GB names zones as operators write them (CET, CEST, BST), where
  // en-US writes "GMT+1".
  const parts = new Intl.DateTimeFormat('en-GB', {
    timeZone: zone || 'UTC', hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit',
    hour: '2-digit', minute: '2-digit', second: '2-digit', timeZoneName: 'short',
  }).formatToParts(date);
  const out = {};
  for (const p of parts) out[p.type] = p.value;
  return out;
}

// zoneTime is "2026-03-29 03:00:00 CEST" for date in zone (default the
// browser's own); bare leaves the zone's name out.
export function zoneTime(date, zone, bare = false) {
  if (!(date instanceof Date) || isNaN(date)) return '—';
  const p = zoneParts(date, zone || localZone());
  const t = `${p.year}-${p.month}-${p.day} ${p.hour}:${p.minute}:${p.second}`;
  return bare ? t : `${t} ${p.timeZoneName}`;
}

export const localZone = () => Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';

// utcOffset is "GMT+01:00" for date in zone.
export function utcOffset(date, zone) {
  const p = new Intl.DateTimeFormat('en-US', { timeZone: zone || 'UTC', timeZoneName: 'longOffset' })
    .formatToParts(date).find((x) => x.type === 'timeZoneName');
  return p ? p.value.replace(/^GMT$/, 'GMT+00:00') : '';
}

// markOffsets pairs each time with its UTC offset in zone and, where the
// offset differs from the previous time's, the change (a DST transition).
export function markOffsets(dates, zone) {
  let prev = null;
  return dates.map((date) => {
    const offset = utcOffset(date, zone);
    const change = prev !== null && prev !== offset ? `${prev} → ${offset}` : '';
    prev = offset;
    return { date, offset, change };
  });
}

const rtf = new Intl.RelativeTimeFormat('en', { numeric: 'auto' });

// relative is "in 5 minutes" or "3 seconds ago".
export function relative(date, now = Date.now()) {
  const s = Math.round((date.getTime() - now) / 1000);
  const a = Math.abs(s);
  if (a < 60) return rtf.format(s, 'second');
  if (a < 3600) return rtf.format(Math.round(s / 60), 'minute');
  if (a < 86400) return rtf.format(Math.round(s / 3600), 'hour');
  return rtf.format(Math.round(s / 86400), 'day');
}

// outputText decodes an attempt's base64 output for display.
export function outputText(b64) {
  if (!b64) return '';
  try {
    const bin = atob(b64);
    const bytes = Uint8Array.from(bin, (c) => c.charCodeAt(0));
    return new TextDecoder('utf-8', { fatal: false }).decode(bytes);
  } catch {
    return '(output not readable)';
  }
}

// --- schedules in words ---------------------------------------------------

const dayNames = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
const monthNames = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August',
  'September', 'October', 'November', 'December'];
const dayAbbr = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'];
const monAbbr = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];

const descriptors = {
  '@yearly': 'every year on 1 January at 00:00',
  '@annually': 'every year on 1 January at 00:00',
  '@monthly': 'on the 1st of every month at 00:00',
  '@weekly': 'every Sunday at 00:00',
  '@daily': 'every day at 00:00',
  '@midnight': 'every day at 00:00',
  '@hourly': 'every hour, on the hour',
};

const isNum = (f) => /^\d+$/.test(f);
const step = (f) => (/^\*\/(\d+)$/.exec(f) || [])[1];

function nameList(field, names, abbr, offset) {
  const word = (v) => {
    const i = abbr.indexOf(v.toLowerCase());
    const n = i >= 0 ? i : Number(v) - offset;
    return names[n % names.length];
  };
  const parts = field.split(',').map((part) => {
    const r = /^(\w+)-(\w+)$/.exec(part);
    if (r) return `${word(r[1])} to ${word(r[2])}`;
    if (!/^\w+$/.test(part)) return null;
    return word(part);
  });
  if (parts.some((p) => !p)) return null;
  return parts.join(', ');
}

function timeWords(sec, min, hour) {
  if (isNum(sec) && isNum(min) && isNum(hour)) {
    return `at ${pad(hour)}:${pad(min)}${sec === '0' ? '' : ':' + pad(sec)}`;
  }
  if (sec === '*' && min === '*' && hour === '*') return 'every second';
  if (step(sec) && min === '*' && hour === '*') return `every ${step(sec)} seconds`;
  if (sec !== '0') return null;
  if (min === '*' && hour === '*') return 'every minute';
  if (step(min) && hour === '*') return `every ${step(min)} minutes`;
  if (isNum(min) && hour === '*') return `every hour at minute ${min}`;
  if (isNum(min) && step(hour)) return `every ${step(hour)} hours at minute ${min}`;
  return null;
}

function dayWords(dom, mon, dow) {
  const parts = [];
  const domAny = dom.startsWith('*') && !step(dom);
  const dowAny = dow === '*' || dow === '?';
  if (!domAny && !isNum(dom) && !step(dom)) return null;
  if (step(dom)) parts.push(`every ${step(dom)} days of the month`);
  else if (!domAny) parts.push(`on day ${dom} of the month`);
  if (!dowAny) {
    const days = nameList(dow, dayNames, dayAbbr, 0);
    if (!days) return null;
    parts.push(`on ${days}`);
  }
  let out = parts.length ? parts.join(' or ') : 'every day';
  if (mon !== '*') {
    const months = nameList(mon, monthNames, monAbbr, 1);
    if (!months) return null;
    out += ` in ${months}`;
  }
  return out;
}

// describeSchedule is the schedule in words, or "" when it is beyond these
// rules (the spec itself is always shown beside it).
export function describeSchedule(spec) {
  const s = (spec || '').trim();
  if (descriptors[s]) return descriptors[s];
  const every = /^@every\s+(\S+)$/.exec(s);
  if (every) return `every ${every[1]}`;
  const f = s.split(/\s+/);
  if (f.length !== 5 && f.length !== 6) return '';
  if (f.length === 5) f.unshift('0');
  const [sec, min, hour, dom, mon, dow] = f;
  const time = timeWords(sec, min, hour);
  const days = dayWords(dom, mon, dow);
  if (!time || !days) return '';
  // "every 5 minutes" needs no "every day".
  if (days === 'every day' && !time.startsWith('at ')) return time;
  return `${time}, ${days}`;
}
