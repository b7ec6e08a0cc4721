import { BytesEnv } from './setting.decorators.js';

/**
 * The most artifact content (characters) a task can be ended with: PostgreSQL holds a JSON string of at most
 * 256 MiB, and a character may take 3 bytes of UTF-8.
 */
export const MAX_STORABLE_OUTPUT = 80 * 1024 * 1024;

/** How much file content a message may carry, and how much one page of a task list holds. */
export class ContentLimitSettings {
  /**
   * Largest `text/*` file part the model reads as text (larger ones are stored and described like binary files).
   */
  @BytesEnv('ARBITER_MAX_TEXT_FILE_BYTES', 0, 16 * 1024 * 1024) maxTextFileBytes = 256 * 1024;

  /** Largest file part (decoded bytes) a message may carry, stored with its task; bigger → invalid params. */
  @BytesEnv('ARBITER_MAX_FILE_BYTES', 1, 64 * 1024 * 1024) maxFileBytes = 5 * 1024 * 1024;

  /** Most file bytes (decoded, all parts) one message may carry; not below `ARBITER_MAX_FILE_BYTES`. */
  @BytesEnv('ARBITER_MAX_MESSAGE_FILE_BYTES', 1, 64 * 1024 * 1024) maxMessageFileBytes = 10 * 1024 * 1024;

  /**
   * Most content (history, artifacts, metadata, status messages, as JSON) one page of `ListTasks` or
   * `GET /v1/requests` carries after its first task; a longer page is cut short with a token for the rest.
   */
  @BytesEnv('ARBITER_LIST_PAGE_BYTES', 64 * 1024, 256 * 1024 * 1024) listPageBytes = 4 * 1024 * 1024;

  /**
   * Most content a task's artifacts may be given (text, file bytes as base64, data as JSON), by its agent's model
   * or its upstream; past it the run is stopped and the task fails (`output_too_large`).
   */
  @BytesEnv('ARBITER_MAX_TASK_OUTPUT_BYTES', 1024 * 1024, MAX_STORABLE_OUTPUT) maxTaskOutputBytes = 64 * 1024 * 1024;
}
