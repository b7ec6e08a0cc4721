import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface ClientCerts {
  /** A client certificate valid now, and its key. */
  cert: string;
  key: string;
  /** One that expired in 2020, and its key. */
  expired: { cert: string; key: string };
  /** A key that belongs to neither. */
  otherKey: string;
}

/** Client certificates made with the `openssl` command, signed by a CA of their own (P-256). */
export function makeClientCerts(): ClientCerts {
  const dir = mkdtempSync(join(tmpdir(), 'arbiter-certs-'));
  try {
    const run = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
    const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
    run('req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.pem', '-subj', '/CN=test-ca', '-days', '2');
    writeFileSync(
      join(dir, 'ca.cnf'),
      [
        '[ca]',
        'default_ca = ca_default',
        '[ca_default]',
        'dir = .',
        'database = index.txt',
        'serial = serial',
        'new_certs_dir = .',
        'default_md = sha256',
        'policy = any',
        '[any]',
        'commonName = supplied',
      ].join('\n'),
    );
    writeFileSync(join(dir, 'index.txt'), '');
    writeFileSync(join(dir, 'serial'), '01\n');
    const sign = (name: string, dates: string[]) => {
      run('req', '-new', ...ec, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`);
      run(
        'ca',
        '-batch',
        '-notext',
        '-config',
        'ca.cnf',
        '-cert',
        'ca.pem',
        '-keyfile',
        'ca.key',
        ...dates,
        '-in',
        `${name}.csr`,
        '-out',
        `${name}.pem`,
      );
      return {
        cert: readFileSync(join(dir, `${name}.pem`), 'utf8'),
        key: readFileSync(join(dir, `${name}.key`), 'utf8'),
      };
    };
    const valid = sign('client', ['-days', '2']);
    const expired = sign('expired', ['-startdate', '20200101000000Z', '-enddate', '20200102000000Z']);
    run('genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', 'other.key');
    return { ...valid, expired, otherKey: readFileSync(join(dir, 'other.key'), 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
