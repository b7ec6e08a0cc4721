/** A version 7 (time-ordered) UUID in its lowercase text form. */
export const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** The Unix milliseconds in the first 48 bits of a UUID's text. */
export const millisOf = (id: string): number => parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
