/** Arbiter's version (as in package.json), for the OpenAPI document and MCP client info. */
export const ARBITER_VERSION = '0.1.0';
