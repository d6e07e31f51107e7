import { cpus, totalmem } from 'node:os';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

export function machine() {
  return { cpus: cpus().length, cpuModel: cpus()[0]?.model ?? 'unknown', memGiB: Math.round(totalmem() / 2 ** 30), node: process.version, date: new Date().toISOString() };
}

export function writeResults(file: string, results: unknown): void {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
  console.log(`results written to ${file}`);
}
