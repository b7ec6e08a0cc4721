import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const root = fileURLToPath(new URL('.', import.meta.url));

// The console is served by Arbiter at /console from dist/console (see src/console/console.module.ts).
export default defineConfig({
  root,
  base: '/console/',
  publicDir: false,
  logLevel: 'warn',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: fileURLToPath(new URL('../dist/console', import.meta.url)),
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: false,
    // One small bundle; nothing is inlined as a data: URL except what CSP allows (img-src data:).
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
  },
});
