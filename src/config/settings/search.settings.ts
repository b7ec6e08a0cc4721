import { DurationEnv, EnumEnv, IntEnv, TextEnv, UrlEnv } from './setting.decorators.js';

export const SEARCH_PROVIDERS = ['searxng', 'brave', 'tavily'] as const;
export type SearchProviderName = (typeof SEARCH_PROVIDERS)[number];

/** The `/search` tool and its providers. */
export class SearchSettings {
  /**
   * Which provider answers `/search`; naming one whose setting is missing stops the start.
   * @default first configured of `searxng`, `brave`, `tavily`
   */
  @EnumEnv('ARBITER_SEARCH_PROVIDER', SEARCH_PROVIDERS) searchProvider?: SearchProviderName;

  /** A SearXNG instance (its JSON API enabled: `search.formats` includes `json`). */
  @UrlEnv('ARBITER_SEARXNG_URL', 'base') searxngUrl?: string;

  /** Enables Brave Search. */
  @TextEnv('BRAVE_SEARCH_API_KEY', { secret: true }) braveApiKey?: string;

  /** Brave Search API base. */
  @UrlEnv('BRAVE_SEARCH_BASE_URL', 'base') braveBaseUrl = 'https://api.search.brave.com';

  /** Enables Tavily. */
  @TextEnv('TAVILY_API_KEY', { secret: true }) tavilyApiKey?: string;

  /** Tavily API base. */
  @UrlEnv('TAVILY_BASE_URL', 'base') tavilyBaseUrl = 'https://api.tavily.com';

  /** One `/search`. */
  @DurationEnv('ARBITER_SEARCH_TIMEOUT_MS', 100, 120_000) searchTimeoutMs = 15_000;

  /** Results one `/search` returns. */
  @IntEnv('ARBITER_SEARCH_RESULTS', 1, 20) searchResults = 5;
}
