/** `npm run docs:config`: writes docs/configuration.md from the settings classes (see config-reference.ts). */
import { writeFileSync } from 'node:fs';
import { relative } from 'node:path';
import { CONFIG_REFERENCE_PATH, REPO_ROOT, renderConfigReference } from './config-reference.js';

writeFileSync(CONFIG_REFERENCE_PATH, await renderConfigReference());
console.log(`wrote ${relative(REPO_ROOT, CONFIG_REFERENCE_PATH)}`);
