import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LedgerError } from '../src/errors.js';
import { ensureArtifacts } from './artifacts.js';
import { findJava } from './java.js';
import { STACK_SASL_MECHANISM, STACK_USERS, type StackSecurity, type StackUser } from '../src/stack/discovery.js';

export const secretsDir = (dir: string) => join(dir, 'secrets');
const passwordFile = (dir: string, user: string) => join(secretsDir(dir), `${user}.password`);

/** 24 random bytes, base64url: nothing that needs quoting in a JAAS line or a SCRAM config value. */
const newPassword = () => randomBytes(24).toString('base64url');

/**
 * The stack users' passwords: generated once into `<dir>/secrets/<user>.password` (folder 0700, files
 * 0600), read back on every later `up`.
 */
export function ensurePasswords(dir: string): { name: StackUser; password: string }[] {
  mkdirSync(secretsDir(dir), { recursive: true, mode: 0o700 });
  chmodSync(secretsDir(dir), 0o700);
  return STACK_USERS.map((name) => {
    const file = passwordFile(dir, name);
    if (!existsSync(file)) writeFileSync(file, newPassword(), { mode: 0o600, flag: 'wx' });
    chmodSync(file, 0o600);
    return { name, password: readFileSync(file, 'utf8').trim() };
  });
}

export function stackSecurity(dir: string, tls: boolean): StackSecurity {
  return {
    protocol: tls ? 'SASL_SSL' : 'SASL_PLAINTEXT',
    ...(tls ? { caFile: join(secretsDir(dir), 'ca.pem') } : {}),
    mechanism: STACK_SASL_MECHANISM,
    passwordFiles: Object.fromEntries(STACK_USERS.map((u) => [u, passwordFile(dir, u)])) as Record<StackUser, string>,
  };
}

export interface StackTls {
  readonly keystore: string;
  readonly truststore: string;
  /** Name of the stores' password file in the secrets folder (without `.password`). */
  readonly storePassword: string;
  readonly caFile: string;
}

/**
 * The broker's TLS material, made once with the JDK's keytool: a self-signed certificate for 127.0.0.1 and
 * localhost in a PKCS12 keystore, the same certificate in a truststore (inter-broker and the registry) and
 * as PEM (`ca.pem`, what clients trust). The store password is generated into a 0600 file and given to
 * keytool as `-storepass:file`, never as an argument.
 */
export function ensureTls(dir: string, javaBin: string, host: string): StackTls {
  const d = secretsDir(dir);
  const tls: StackTls = { keystore: join(d, 'broker.p12'), truststore: join(d, 'truststore.p12'), storePassword: 'tls-store', caFile: join(d, 'ca.pem') };
  if ([tls.keystore, tls.truststore, tls.caFile].every((f) => existsSync(f))) return tls;
  for (const f of [tls.keystore, tls.truststore, tls.caFile]) rmSync(f, { force: true });
  const pwFile = join(d, `${tls.storePassword}.password`);
  if (!existsSync(pwFile)) writeFileSync(pwFile, newPassword(), { mode: 0o600, flag: 'wx' });
  const keytool = javaBin.includes('/') ? join(javaBin, '..', 'keytool') : 'keytool';
  const run = (args: string[]) => {
    const r = spawnSync(keytool, args, { encoding: 'utf8' });
    if (r.status !== 0) throw new LedgerError('ENVIRONMENT', `keytool ${args[0]} failed: ${(r.stderr || r.stdout || String(r.error)).trim().split('\n')[0]}`);
  };
  const pass = ['-storepass:file', pwFile];
  run(['-genkeypair', '-alias', 'broker', '-keyalg', 'RSA', '-keysize', '2048', '-validity', '3650', '-dname', 'CN=plan-ledger local broker', '-ext', `SAN=ip:${host},dns:localhost`, '-storetype', 'PKCS12', '-keystore', tls.keystore, ...pass]);
  run(['-exportcert', '-rfc', '-alias', 'broker', '-keystore', tls.keystore, '-storetype', 'PKCS12', '-file', tls.caFile, ...pass]);
  run(['-importcert', '-noprompt', '-alias', 'broker', '-file', tls.caFile, '-storetype', 'PKCS12', '-keystore', tls.truststore, ...pass]);
  for (const f of [tls.keystore, tls.truststore]) chmodSync(f, 0o600);
  return tls;
}

/** The Java client properties a stack tool or the registry needs to reach a SASL (and TLS) listener as `user`. */
export function javaClientProperties(security: StackSecurity, user: StackUser, dir: string): string[] {
  const password = readFileSync(security.passwordFiles[user], 'utf8').trim();
  const lines = [
    `security.protocol=${security.protocol}`,
    `sasl.mechanism=${STACK_SASL_MECHANISM}`,
    `sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="${user}" password="${password}";`,
  ];
  if (security.protocol === 'SASL_SSL') {
    const d = secretsDir(dir);
    lines.push('ssl.truststore.type=PKCS12', `ssl.truststore.location=${join(d, 'truststore.p12')}`, `ssl.truststore.password=${readFileSync(join(d, 'tls-store.password'), 'utf8').trim()}`);
  }
  return lines;
}

/** SASL settings (a ledger config's `sasl`) for one stack user, the password read from its file now. */
export function stackSasl(security: StackSecurity, user: StackUser): { mechanism: 'scram-sha-512'; username: string; password: string } {
  return { mechanism: 'scram-sha-512', username: user, password: readFileSync(security.passwordFiles[user], 'utf8').trim() };
}

/**
 * Rotates a stack user's SCRAM password on the running broker and in its password file: Kafka's own
 * `ConfigCommand` (`kafka-configs.sh --alter --add-config SCRAM-SHA-512=[...]`), run as the admin user
 * from a java argument file and a client properties file (both 0600, removed after), so neither password
 * reaches a command line. The broker takes the new credential at once; connections already
 * authenticated stay up, new ones need the new password — restart the user's components one by one.
 * `admin` is refused: it is the brokers' own inter-broker and controller login (wipe or re-format to change it).
 */
export function rotateStackPassword(opts: { dir: string; brokers: readonly string[]; security: StackSecurity; user: string }): { passwordFile: string } {
  const user = opts.user as StackUser;
  if (!STACK_USERS.includes(user)) throw new LedgerError('VALIDATION', `no stack user "${opts.user}"; users: ${STACK_USERS.join(', ')}`, { field: 'user' });
  if (user === 'admin') {
    throw new LedgerError('VALIDATION', 'the admin password is the brokers\' own login (inter-broker and controller); it is fixed for the life of the stack\'s storage', { field: 'user' });
  }
  const java = findJava(17, 'the Kafka tools');
  const artifacts = ensureArtifacts();
  const password = newPassword();
  const dir = secretsDir(opts.dir);
  const props = join(dir, `rotate-${process.pid}.properties`);
  const argFile = join(dir, `rotate-${process.pid}.args`);
  try {
    writeFileSync(props, `${javaClientProperties(opts.security, 'admin', opts.dir).join('\n')}\n`, { mode: 0o600 });
    const args = ['kafka.admin.ConfigCommand', '--bootstrap-server', opts.brokers.join(','), '--command-config', props, '--alter', '--add-config', `${STACK_SASL_MECHANISM}=[iterations=8192,password=${password}]`, '--entity-type', 'users', '--entity-name', user];
    writeFileSync(argFile, `${args.join('\n')}\n`, { mode: 0o600 });
    const r = spawnSync(java.bin, ['-cp', `${artifacts.kafkaLibs}/*`, '-Dlog4j2.level=WARN', `@${argFile}`], { encoding: 'utf8' });
    if (r.status !== 0) {
      const reason = `${r.stderr}\n${r.stdout}`.split('\n').find((l) => /error|exception/i.test(l)) ?? `exit ${r.status}`;
      throw new LedgerError('ENVIRONMENT', `rotating the password of ${user} failed: ${reason.split(password).join('***').trim()}`);
    }
  } finally {
    rmSync(argFile, { force: true });
    rmSync(props, { force: true });
  }
  const file = opts.security.passwordFiles[user];
  const next = `${file}.new`;
  writeFileSync(next, password, { mode: 0o600 });
  renameSync(next, file);
  return { passwordFile: file };
}
