// Errors the read and triage domains raise for bad input and unknown resources, a
// base module so that neither imports the other for them. The HTTP layer maps them to
// 400 / 404 with the message as `{"error": ...}`; domain code stays free of HTTP types.
export class ReadInputError extends Error {
  readonly status = 400 as const;
}

export class ReadNotFoundError extends Error {
  readonly status = 404 as const;
}
