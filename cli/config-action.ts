import { configToEnv, loadConfig, type StackEndpoints } from '../src/config.js';
import { isLedgerError } from '../src/errors.js';
import { COMPONENTS, describeSettings, type Component, type SettingRow } from '../src/settings.js';
import { readStackInfo } from '../src/stack/discovery.js';
import { json, out } from './output.js';

/** A variable as `plan-ledger config` shows it; `stack` when the running local stack supplied the value. */
export interface EffectiveSetting extends Omit<SettingRow, 'source'> {
  readonly source: SettingRow['source'] | 'stack';
}

/**
 * Every variable's effective value and its source, secrets redacted. The connection variables are shown
 * as `loadConfig` compiles them, so what the running local stack supplies (brokers, registry, a SASL
 * stack's login) shows with source `stack`. A bad value throws, as at any component's start.
 */
export function effectiveSettings(env: NodeJS.ProcessEnv = process.env, stack: () => StackEndpoints | undefined = readStackInfo): EffectiveSetting[] {
  const rows = describeSettings(env);
  let usedStack = false;
  let connection: Record<string, string> | undefined;
  try {
    const config = loadConfig({}, env, {
      stack: () => {
        const found = stack();
        usedStack = found !== undefined;
        return found;
      },
    });
    connection = configToEnv(config);
  } catch (e) {
    // No broker or registry anywhere: the rows say "unset"; any other failure is a bad value.
    if (!(isLedgerError(e, 'VALIDATION') && e.details.missing === true)) throw e;
  }
  return rows.map((r): EffectiveSetting => {
    const compiled = connection?.[r.name];
    if (!usedStack || r.component !== 'connection' || r.source === 'env' || compiled === undefined || compiled === '') return r;
    if (r.source === 'default' && r.value === compiled) return r;
    return { ...r, value: r.secret ? '[secret]' : compiled, source: 'stack' };
  });
}

export function printConfig(o: { json?: boolean }): void {
  const rows = effectiveSettings();
  if (o.json) return json(rows);
  const nameWidth = Math.max(...rows.map((r) => r.name.length));
  const valueWidth = Math.min(48, Math.max(...rows.map((r) => (r.value ?? '-').length)));
  let component: Component | undefined;
  for (const r of rows) {
    if (r.component !== component) {
      if (component !== undefined) out();
      component = r.component;
      out(`${component}: ${COMPONENTS[component].doc}`);
    }
    const value = (r.value ?? '-').padEnd(valueWidth);
    out(`  ${r.name.padEnd(nameWidth)}  ${value}  ${r.source}${r.testOnly ? ' (tests only)' : ''}`.trimEnd());
  }
}
