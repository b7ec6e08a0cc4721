import { ConfigError, envName } from './read-settings.js';
import type { SearchProviderName } from './search.settings.js';
import type { ConfigKey, Settings } from './settings-areas.js';

/**
 * Rules between settings, checked once each is valid on its own: the first one broken stops the start.
 */
export function checkRelations(config: Settings): void {
  if (config.adminToken && config.adminTokenPath) {
    throw new ConfigError([`set ${envName('adminToken')} or ${envName('adminTokenPath')}, not both`]);
  }
  if (config.secretsKey && config.secretsKeyFile) {
    throw new ConfigError([`set ${envName('secretsKey')} or ${envName('secretsKeyFile')}, not both`]);
  }
  notGreater(config, 'headersTimeoutMs', 'requestTimeoutMs');
  notGreater(config, 'maxFileBytes', 'maxMessageFileBytes');
  if (config.pushLeaseMs <= config.pushTimeoutMs) {
    // A claim that could expire during one POST would let another replica deliver out of order.
    throw new ConfigError([
      `${envName('pushLeaseMs')} must be greater than ${envName('pushTimeoutMs')} (got ${config.pushLeaseMs} <= ${config.pushTimeoutMs})`,
    ]);
  }
  const needs: Record<SearchProviderName, ConfigKey> = {
    searxng: 'searxngUrl',
    brave: 'braveApiKey',
    tavily: 'tavilyApiKey',
  };
  if (config.searchProvider && !config[needs[config.searchProvider]]) {
    throw new ConfigError([
      `${envName('searchProvider')} is ${config.searchProvider}, which needs ${envName(needs[config.searchProvider])} (it is not set)`,
    ]);
  }
}

type NumberKey = { [K in ConfigKey]: Settings[K] extends number ? K : never }[ConfigKey];

function notGreater(config: Settings, small: NumberKey, large: NumberKey): void {
  if (config[small] > config[large]) {
    throw new ConfigError([
      `${envName(small)} must not be greater than ${envName(large)} (got ${config[small]} > ${config[large]})`,
    ]);
  }
}
