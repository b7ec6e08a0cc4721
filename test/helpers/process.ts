import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';

export interface ServerProcess {
  child: ChildProcess;
  url: string;
  stdout: () => string;
  stderr: () => string;
  /** Sends a signal and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

const MAIN = 'dist/src/main.js';
/** The servers a test starts carry the loopback-only tripwire too. */
const TRIPWIRE = ['--import', './dist/test/helpers/loopback-only.js'];

/** Runs `node dist/src/main.js` as a child process until it exits; resolves with code and output. */
export async function runToExit(env: Record<string, string>, args: string[] = [], timeoutMs = 30_000) {
  const child = spawn(process.execPath, [...TRIPWIRE, MAIN, ...args], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: 'pipe',
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const [code] = (await once(child, 'exit')) as [number | null];
  clearTimeout(timer);
  return { code, stdout: out, stderr: err };
}

/** Starts the server as a child process and waits for its "listening on" log line. */
export async function startServerProcess(env: Record<string, string>, args: string[] = []): Promise<ServerProcess> {
  const child = spawn(process.execPath, [...TRIPWIRE, MAIN, ...args], {
    env: { PATH: process.env.PATH ?? '', PORT: '0', LOG_LEVEL: 'info', ...env },
    stdio: 'pipe',
  });
  let out = '';
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      // Not left running: a server that starts later would hold the test file open.
      child.kill('SIGKILL');
      reject(new Error(`server did not start:\n${out}\n${err}`));
    }, 30_000);
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening on (http:\/\/[^\s]+)/.exec(out);
      if (m?.[1]) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code}:\n${out}\n${err}`));
    });
  });
  return {
    child,
    url,
    stdout: () => out,
    stderr: () => err,
    stop: async (signal = 'SIGTERM') => {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      const exited = once(child, 'exit') as Promise<[number | null]>;
      child.kill(signal);
      const [code] = await exited;
      return code;
    },
  };
}
