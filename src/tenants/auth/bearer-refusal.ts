/** Why a bearer was refused (401, or 403 for a valid credential that may not act here); the guard answers it. */
export class BearerRefusalError extends Error {
  constructor(
    message: string,
    readonly status: 401 | 403 = 401,
  ) {
    super(message);
    this.name = 'BearerRefusalError';
  }
}
