// The one error type of the uploader domain: a status and a message the HTTP layer
// turns into `{"error": "..."}` (sentry-cli shows that message to the user).
export class UploadError extends Error {
  constructor(
    readonly status: 400 | 404 | 409 | 413 | 503,
    message: string,
  ) {
    super(message);
  }
}
