// Errors the read domain raises for bad input and unknown resources. The HTTP
// layer maps them to 400 / 404 with the message as `{"error": ...}`; domain code
// stays free of HTTP types.
export class ReadInputError extends Error {
  readonly status = 400 as const;
}

export class ReadNotFoundError extends Error {
  readonly status = 404 as const;
}
