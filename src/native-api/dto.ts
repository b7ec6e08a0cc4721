import { EmptyBodyAllowed } from '../common/validation.pipe.js';
import { OmittableNotNull } from '../common/validation.js';
import { IsObject, IsOptional, IsString, Matches, MaxLength, MinLength } from 'class-validator';

export const MAX_MESSAGE_CHARS = 200_000;
// eslint-disable-next-line no-control-regex
const NO_CONTROL = /^[^\u0000-\u001f\u007f]*$/;

/** `POST /v1/agents/:id/chat` and `POST /v1/conversations/:id/messages`. */
export class ChatDto {
  @IsString({ message: 'message is required and must be a string' })
  @MinLength(1, { message: 'message must not be empty' })
  @MaxLength(MAX_MESSAGE_CHARS, { message: `message must be at most ${MAX_MESSAGE_CHARS} characters` })
  message: string;

  /** Continue a context (an A2A contextId or a conversation id) with the same agent. */
  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxLength(256)
  @Matches(NO_CONTROL, { message: 'context_id must not contain control characters' })
  context_id?: string;
}

/** `POST /v1/orchestrate`. */
export class OrchestrateDto extends ChatDto {
  @IsOptional()
  @Matches(/^[A-Za-z0-9_-]{1,64}$/, { message: 'agent must match [A-Za-z0-9_-]{1,64}' })
  agent?: string;

  /** An agent defined in the request instead of a catalog one (validated like `POST /v1/agents`). */
  @IsOptional()
  @IsObject({ message: 'agent_def must be a JSON object' })
  agent_def?: Record<string, unknown>;
}

@EmptyBodyAllowed()
export class ConversationCreateDto {
  @OmittableNotNull()
  @Matches(/^[A-Za-z0-9_-]{1,64}$/, { message: 'agent must match [A-Za-z0-9_-]{1,64}' })
  agent?: string;

  @OmittableNotNull()
  @IsString()
  @MaxLength(200)
  @Matches(NO_CONTROL, { message: 'title must not contain control characters' })
  title?: string;
}

export class ConversationPatchDto {
  @IsString({ message: 'title is required and must be a string' })
  @MaxLength(200)
  @Matches(NO_CONTROL, { message: 'title must not contain control characters' })
  title: string;
}

export class MessageDto {
  @IsString({ message: 'message is required and must be a string' })
  @MinLength(1, { message: 'message must not be empty' })
  @MaxLength(MAX_MESSAGE_CHARS, { message: `message must be at most ${MAX_MESSAGE_CHARS} characters` })
  message: string;
}
