import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { PATIENCE_MS } from './patience.js';
import { TEST_NODE_FLAGS } from './runtime-flags.js';

export interface ServerProcess {
  child: ChildProcess;
  url: string;
  stdout: () => string;
  stderr: () => string;
  /** Resolves with the first match of `pattern` in stdout, as soon as the process prints it (bounded by `PATIENCE_MS`). */
  printed(pattern: RegExp): Promise<RegExpExecArray>;
  /** Sends a signal and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

const MAIN = 'dist/src/main.js';
/** The servers a test starts run as the tests do: the loopback-only tripwire, baseline compilers (`runtime-flags.ts`). */
const TRIPWIRE = TEST_NODE_FLAGS;

/**
 * What a server process takes from the test's environment: the path, and the run's compile cache and temporary
 * directory (`run-tests.mjs`).
 */
function inherited(): Record<string, string> {
  const { NODE_COMPILE_CACHE: cache, TMPDIR: tmp } = process.env;
  return {
    PATH: process.env.PATH ?? '',
    ...(cache ? { NODE_COMPILE_CACHE: cache } : {}),
    ...(tmp ? { TMPDIR: tmp } : {}),
  };
}

/**
 * Runs `node dist/src/main.js` as a child process until it exits; resolves with code and output.
 * A process still running after `timeoutMs` (minutes: only a broken start takes that long) is killed: code null.
 */
export async function runToExit(env: Record<string, string>, args: string[] = [], timeoutMs = PATIENCE_MS) {
  const child = spawn(process.execPath, [...TRIPWIRE, MAIN, ...args], {
    env: { ...inherited(), ...env },
    stdio: 'pipe',
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  // 'close', not 'exit': at 'exit' the child's output may not all have been read yet.
  const [code] = (await once(child, 'close')) as [number | null];
  clearTimeout(timer);
  return { code, stdout: out, stderr: err };
}

/**
 * Starts the server as a child process and waits for its "listening on" log
 * line, however long the start takes on a loaded machine (a first embedded
 * start creates and migrates a database); only after `PATIENCE_MS` is it
 * given up as hung.
 */
export async function startServerProcess(env: Record<string, string>, args: string[] = []): Promise<ServerProcess> {
  const child = spawn(process.execPath, [...TRIPWIRE, MAIN, ...args], {
    // Runs left in flight end at a SIGTERM at once, not after the default 10 s of grace (a test of it sets its own).
    env: { ...inherited(), PORT: '0', LOG_LEVEL: 'info', ARBITER_SHUTDOWN_GRACE_MS: '0', ...env },
    stdio: 'pipe',
  });
  let out = '';
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      // Not left running: a server that starts later would hold the test file open.
      child.kill('SIGKILL');
      reject(new Error(`server did not start within ${Math.round(PATIENCE_MS / 1000)} s:\n${out}\n${err}`));
    }, PATIENCE_MS);
    let listening = false;
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      // Searched until found, then no more: the whole output again at every line of a long-running server adds up.
      if (listening) return;
      const m = /listening on (http:\/\/[^\s]+)/.exec(out);
      if (m?.[1]) {
        listening = true;
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code}:\n${out}\n${err}`));
    });
  });
  const printed = (pattern: RegExp): Promise<RegExpExecArray> =>
    new Promise((resolve, reject) => {
      const check = (): boolean => {
        const m = pattern.exec(out);
        if (!m) return false;
        done();
        resolve(m);
        return true;
      };
      const onExit = (): void => {
        if (check()) return;
        done();
        reject(new Error(`the server exited without printing ${String(pattern)}:\n${out}\n${err}`));
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`the server did not print ${String(pattern)} within ${Math.round(PATIENCE_MS / 1000)} s`));
      }, PATIENCE_MS);
      const done = (): void => {
        clearTimeout(timer);
        child.stdout.off('data', check);
        child.off('close', onExit);
      };
      if (check()) return;
      child.stdout.on('data', check);
      child.once('close', onExit); // after its output has all been read
    });
  return {
    child,
    url,
    stdout: () => out,
    stderr: () => err,
    printed,
    stop: async (signal = 'SIGTERM') => {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      const exited = once(child, 'exit') as Promise<[number | null]>;
      child.kill(signal);
      const [code] = await exited;
      return code;
    },
  };
}
