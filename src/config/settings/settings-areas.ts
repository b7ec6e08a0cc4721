import { CardSigningSettings } from './card-signing.settings.js';
import { ContentLimitSettings } from './content-limits.settings.js';
import { IdentitySettings } from './identity.settings.js';
import { McpSettings } from './mcp.settings.js';
import { ModelSettings } from './model.settings.js';
import { ObservabilitySettings } from './observability.settings.js';
import { PushSettings } from './push.settings.js';
import { QuotaSettings } from './quota.settings.js';
import { RemoteAgentSettings } from './remote-agent.settings.js';
import { SearchSettings } from './search.settings.js';
import { SecretsSettings } from './secrets.settings.js';
import { ServerSettings } from './server.settings.js';
import { StorageSettings } from './storage.settings.js';
import { ToolSettings } from './tool.settings.js';

/** A group of settings: one class, one section of the reference page. */
export interface SettingsArea {
  readonly title: string;
  readonly schema: new () => object;
}

/**
 * Every settings class, in the order the reference page (docs/configuration.md) shows them. A setting belongs to
 * the class of its area; a new area is added here.
 */
export const SETTINGS_AREAS = [
  { title: 'Server and HTTP', schema: ServerSettings },
  { title: 'State and database', schema: StorageSettings },
  { title: 'Logs, metrics and traces', schema: ObservabilitySettings },
  { title: 'Files and task lists', schema: ContentLimitSettings },
  { title: 'Tenant quotas', schema: QuotaSettings },
  { title: 'Identity providers', schema: IdentitySettings },
  { title: 'Signed agent cards', schema: CardSigningSettings },
  { title: 'Stored credentials and outbound tokens', schema: SecretsSettings },
  { title: 'Models and turns', schema: ModelSettings },
  { title: 'Tools: /write and /fetch', schema: ToolSettings },
  { title: 'Web search: /search', schema: SearchSettings },
  { title: 'Remote A2A agents: /a2a', schema: RemoteAgentSettings },
  { title: 'Push notifications', schema: PushSettings },
  { title: 'MCP servers: /mcp', schema: McpSettings },
] as const satisfies readonly SettingsArea[];

/** Every setting, as one object type: what `AppConfig` holds. */
export type Settings = ServerSettings &
  StorageSettings &
  ObservabilitySettings &
  ContentLimitSettings &
  QuotaSettings &
  IdentitySettings &
  CardSigningSettings &
  SecretsSettings &
  ModelSettings &
  ToolSettings &
  SearchSettings &
  RemoteAgentSettings &
  PushSettings &
  McpSettings;

export type ConfigKey = keyof Settings;
