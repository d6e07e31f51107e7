import { readExecutors, type ExecutorInfo, type ExecutorList } from '../src/executors/index.js';
import { withLog } from './connect.js';
import { json, ms, out, painter, table, type Painter } from './output.js';

/** Tool names a table cell shows before "+N more" (`--json` lists them all). */
const TOOLS_SHOWN = 6;

function names(list: readonly string[], omitted = 0): string {
  const shown = list.slice(0, TOOLS_SHOWN);
  const more = list.length - shown.length + omitted;
  return `${shown.join(', ') || '—'}${more > 0 ? ` +${more} more` : ''}`;
}

function row(e: ExecutorInfo, paint: Painter): string[] {
  return [
    e.executorId,
    e.live ? paint('green', 'live') : paint('red', 'stale'),
    `${ms(e.heartbeatAgeMs)} ago`,
    e.partitions.join(',') || '—',
    names(e.tools, e.toolsOmitted),
    names(e.agents),
    `${e.host}:${e.pid}`,
    e.version,
  ];
}

export function renderExecutors(list: ExecutorList, paint: Painter = painter()): string[] {
  const lines: string[] = [];
  const all = [...list.live, ...list.stale];
  if (all.length === 0) lines.push(`no executor has announced itself on ${list.topic}`);
  else lines.push(table(['EXECUTOR', 'STATUS', 'HEARTBEAT', 'PARTITIONS', 'TOOLS', 'AGENTS', 'HOST:PID', 'VERSION'], all.map((e) => row(e, paint)), { paint }));
  for (const e of list.stale) lines.push(`${paint('red', 'stale')} ${e.executorId}: ${e.staleReason}`);
  for (const r of list.invalid) lines.push(`${paint('yellow', 'skipped')} record at offset ${r.offset}${r.key === null ? '' : ` (key ${JSON.stringify(r.key)})`}: ${r.reason}`);
  return lines;
}

export async function executors(o: { json?: boolean; staleAfter?: number }): Promise<void> {
  await withLog(async (log) => {
    const list = await readExecutors(log.kafka, log.config, { admin: log.admin, ...(o.staleAfter !== undefined ? { staleAfterMs: o.staleAfter } : {}) });
    if (o.json) json(list);
    else for (const l of renderExecutors(list)) out(l);
  });
}
