import Table from 'cli-table3';

/** Colors only on a terminal, never when NO_COLOR is set or output is piped. */
export function useColor(stream: NodeJS.WriteStream = process.stdout): boolean {
  return Boolean(stream.isTTY) && !process.env.NO_COLOR && process.env.TERM !== 'dumb';
}

const codes = { bold: [1, 22], dim: [2, 22], red: [31, 39], green: [32, 39], yellow: [33, 39], cyan: [36, 39], magenta: [35, 39] } as const;
export type Style = keyof typeof codes;

export interface Painter {
  (style: Style, text: string): string;
  readonly enabled: boolean;
}

export function painter(enabled = useColor()): Painter {
  const paint = (style: Style, text: string) => (enabled ? `\u001b[${codes[style][0]}m${text}\u001b[${codes[style][1]}m` : text);
  return Object.assign(paint, { enabled });
}

/** Color of a plan or item status. */
export function statusStyle(status: string): Style | undefined {
  if (status === 'completed' || status === 'succeeded' || status === 'approved') return 'green';
  if (status.startsWith('failed') || status === 'cancelled' || status === 'rejected') return 'red';
  if (status === 'running' || status === 'in_progress' || status === 'result_committed' || status.startsWith('retry')) return 'yellow';
  if (status === 'proposed' || status === 'draft') return 'cyan';
  return undefined;
}

export function paintStatus(paint: Painter, status: string): string {
  const s = statusStyle(status);
  return s ? paint(s, status) : status;
}

/** Aligned columns without borders (cli-table3 measures colored text correctly). */
export function table(head: string[], rows: string[][], opts: { indent?: number; paint?: Painter } = {}): string {
  const paint = opts.paint ?? painter(false);
  const t = new Table({
    head: head.map((h) => paint('dim', h)),
    chars: {
      top: '', 'top-mid': '', 'top-left': '', 'top-right': '',
      bottom: '', 'bottom-mid': '', 'bottom-left': '', 'bottom-right': '',
      left: ' '.repeat(opts.indent ?? 0), 'left-mid': '', mid: '', 'mid-mid': '',
      right: '', 'right-mid': '', middle: '  ',
    },
    style: { head: [], border: [], 'padding-left': 0, 'padding-right': 0, compact: true },
  });
  t.push(...rows);
  return t
    .toString()
    .split('\n')
    .map((l) => l.trimEnd())
    .join('\n');
}

export function out(line = ''): void {
  process.stdout.write(`${line}\n`);
}

/** One JSON document (or one JSON line) on stdout. */
export function json(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}

export function ms(n: number | null): string {
  if (n === null) return '';
  if (n < 1000) return `${n}ms`;
  if (n < 60_000) return `${(n / 1000).toFixed(1)}s`;
  return `${Math.floor(n / 60_000)}m${Math.round((n % 60_000) / 1000)}s`;
}

/** `plan-x/refund/1` -> `…/refund/1` when it starts with the plan id (the table says which plan). */
export function elide(text: string, planId: string): string {
  return text.split(planId).join('…');
}
