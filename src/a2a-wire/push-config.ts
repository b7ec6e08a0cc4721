/** The A2A version a push config was created through: its payloads go out in that dialect. */
export type PushDialect = '1.0' | '0.3';

/** A push config as a client sends it (spec §4.3.1), already read by a dialect. */
export interface PushConfigInput {
  /** The client's id; absent → the server picks one. */
  id?: string;
  url: string;
  token?: string;
  authentication?: { scheme: string; credentials?: string };
}

/**
 * A stored config as reads return it (spec §3.1.8): the secrets (`token`,
 * credentials) are never part of it — only whether they are set.
 */
export interface PushConfigView {
  id: string;
  taskId: string;
  url: string;
  dialect: PushDialect;
  tokenSet: boolean;
  authentication?: { scheme: string; credentialsSet: boolean };
}
