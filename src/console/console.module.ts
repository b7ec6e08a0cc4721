import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Logger, Module, type MiddlewareConsumer, type NestModule } from '@nestjs/common';
import express, { type NextFunction, type Request, type Response } from 'express';
import helmet from 'helmet';

/** Where `npm run build` puts the console (`vite build` → `dist/console`), next to the compiled server. */
export const CONSOLE_DIR = fileURLToPath(new URL('../../console/', import.meta.url));

/** The path the console is served under. */
export const CONSOLE_PATH = '/console';

/**
 * The console's own headers: its scripts, styles and API calls come from this origin only (no inline script,
 * no CDN), it is never framed, and nothing it links to learns where it was opened from. The API keeps
 * helmet's defaults (set in `app.factory.ts`).
 */
const consoleHeaders = helmet({
  contentSecurityPolicy: {
    useDefaults: false,
    directives: {
      defaultSrc: ["'none'"],
      scriptSrc: ["'self'"],
      styleSrc: ["'self'"],
      imgSrc: ["'self'", 'data:', 'blob:'],
      connectSrc: ["'self'"],
      fontSrc: ["'self'"],
      manifestSrc: ["'self'"],
      baseUri: ["'none'"],
      formAction: ["'none'"],
      frameAncestors: ["'none'"],
      objectSrc: ["'none'"],
    },
  },
  referrerPolicy: { policy: 'no-referrer' },
});

/**
 * Serves the built console at `/console`: hashed assets cached for a year, and every other path under
 * `/console` answered with `index.html` (the console routes on the client; `no-cache` so a new build is
 * picked up at once). Only GET and HEAD; the console is plain files and never sees a token.
 */
export function consoleMiddleware(dir: string) {
  const index = join(dir, 'index.html');
  const assets = express.static(dir, {
    index: false,
    fallthrough: true,
    redirect: false,
    dotfiles: 'ignore',
    setHeaders: (res, path) => {
      res.setHeader(
        'Cache-Control',
        path.includes(`${join(dir, 'assets')}`) ? 'public, max-age=31536000, immutable' : 'no-cache',
      );
    },
  });
  const sendIndex = (res: Response, next: NextFunction): void => {
    if (!existsSync(index)) {
      res
        .status(404)
        .type('text/plain')
        .send('The console is not built: run `npm run build` (it builds the server and the console).\n');
      return;
    }
    res.setHeader('Cache-Control', 'no-cache');
    res.sendFile(index, (err) => {
      if (err) next(err);
    });
  };
  return (req: Request, res: Response, next: NextFunction): void => {
    // `originalUrl`: Nest mounts module middleware with `app.use(path, …)`, which strips the mount path from `url`.
    const url = req.originalUrl ?? req.url ?? '';
    if (url !== CONSOLE_PATH && !url.startsWith(`${CONSOLE_PATH}/`) && !url.startsWith(`${CONSOLE_PATH}?`)) {
      next();
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('Allow', 'GET, HEAD');
      res.status(405).json({ error: 'the console is read with GET', code: 'method_not_allowed' });
      return;
    }
    consoleHeaders(req, res, (err?: unknown) => {
      if (err) return next(err);
      const rest = url.slice(CONSOLE_PATH.length);
      if (rest === '' || rest.startsWith('?')) {
        // `/console` → `/console/`, so relative asset URLs resolve under the console.
        res.redirect(301, `${CONSOLE_PATH}/${rest}`);
        return;
      }
      const path = rest.split('?')[0] ?? '/';
      // A missing asset is a 404, not the page (a stale tab asking for an old bundle must not get HTML).
      const isAsset = path.startsWith('/assets/') || /\.[a-z0-9]{1,8}$/i.test(path);
      const mounted = req.url;
      req.url = rest;
      assets(req, res, () => {
        req.url = mounted;
        if (isAsset) {
          res.status(404).type('text/plain').send('not found\n');
          return;
        }
        sendIndex(res, next);
      });
    });
  };
}

/** The web console (`console/`, built into `dist/console`), served by the same process at `/console`. */
@Module({})
export class ConsoleModule implements NestModule {
  private readonly logger = new Logger('Console');

  configure(consumer: MiddlewareConsumer): void {
    if (!existsSync(join(CONSOLE_DIR, 'index.html'))) {
      this.logger.warn(`the console is not built (${CONSOLE_DIR} has no index.html): run npm run build`);
    }
    consumer.apply(consoleMiddleware(CONSOLE_DIR)).forRoutes('{*path}');
  }
}
