// An event's title where its row leaves it out. Most titles are the exception's type and
// message (`TypeError: x is undefined`), which the row holds anyway in `error_type` and
// `message`; the D1 ingest (src/ingest/d1-commit.ts) stores such a title as '' (a title
// normalisation never makes: an event without one is `<unlabeled event>`), saving D1 about
// 80 bytes per event, and every reader of a row's title goes through `eventTitle`, so the
// API, the dashboard and the export answer the same whichever edition stored the row.

/** The title as a row stores it: '' when it is `${errorType}: ${message}`, else the title. */
export function storedTitle(title: string, errorType: string, message: string): string {
  return errorType !== '' && title === `${errorType}: ${message}` ? '' : title;
}

/** An event row's title, made again when the row left it out (storedTitle). */
export function eventTitle(row: { title: string; error_type: string; message: string }): string {
  return row.title === '' && row.error_type !== '' ? `${row.error_type}: ${row.message}` : row.title;
}
