// format.js: times and percentages in words, in the learner's locale.

export function pct(r) { return `${Math.round(r * 100)}%`; }

// when is a moment as a short local date and time.
export function when(ms) {
  return new Date(ms).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
}

// relative is a span from now in words: "in 10 minutes", "tomorrow".
export function relative(ms) {
  const rtf = new Intl.RelativeTimeFormat(undefined, { numeric: "auto" });
  const mins = Math.round(ms / 60000);
  if (Math.abs(mins) < 60) return rtf.format(Math.max(mins, 1), "minute");
  const hours = Math.round(mins / 60);
  if (Math.abs(hours) < 24) return rtf.format(hours, "hour");
  return rtf.format(Math.round(hours / 24), "day");
}
