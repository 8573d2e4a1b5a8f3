/**
 * Errors that carry an HTTP status and a message safe to show the caller. Services throw
 * them; the API and the console render them. Anything else is an internal error.
 */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = new.target.name;
  }
}

export class BadRequestError extends HttpError {
  constructor(message: string) {
    super(400, message);
  }
}

export class UnauthorizedError extends HttpError {
  constructor(message: string) {
    super(401, message);
  }
}

export class NotFoundError extends HttpError {
  constructor(message: string) {
    super(404, message);
  }
}

export class PayloadTooLargeError extends HttpError {
  constructor(message: string) {
    super(413, message);
  }
}

/** 409: the thing is in a state that does not allow the change (a finished task cannot be cancelled). */
export class ConflictError extends HttpError {
  constructor(message: string) {
    super(409, message);
  }
}

/** 422: the request is well-formed but breaks a rule. */
export class ValidationError extends HttpError {
  constructor(message: string) {
    super(422, message);
  }
}

/** The caller went away before the answer (nginx's 499): nothing is sent, the work was stopped. */
export class ClientClosedRequestError extends HttpError {
  constructor() {
    super(499, 'Client closed request');
  }
}
