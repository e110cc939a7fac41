import type { Command } from 'commander';
import { knowingCharts } from './charts-option.ts';
import { table } from './format.ts';
import {
  ALERT_RULES,
  evaluateAlerts,
  parseThreshold,
  type AlertRuleName,
} from '../observe/alerts.ts';
import { progressLine } from '../observe/progress.ts';
import { CliOptionError } from './paths.ts';
import { formatDuration } from './status.ts';
import { parseWhen } from './tail.ts';
import { openExistingStore, storeCommand, type StoreOptions } from './store-option.ts';

interface AlertsOptions extends StoreOptions {
  set: string[];
  rule: string[];
  at?: string;
  limit: string;
  json?: boolean;
  exitCode?: boolean;
}

const collect = (value: string, previous: string[]) => [...previous, value];

/** Threshold value as people read it: durations for `…Ms`, lists joined. */
function showThreshold(key: string, value: unknown): string {
  if (Array.isArray(value)) return value.join(',');
  if (typeof value === 'number' && key.endsWith('Ms')) return formatDuration(value);
  return String(value);
}

/** `agentcharts alerts`: the six alert rules of “Agent State Machine Design”, evaluated over the store now. */
export function registerAlerts(program: Command): void {
  knowingCharts(storeCommand(program, 'alerts'))
    .description(
      'Evaluate the six alert rules of “Agent State Machine Design” over the store (running too long, retry flapping, paused abandoned, blocked prolonged, too many failed, invalid transition spike)',
    )
    .option(
      '--set <rule.key=value>',
      'override a threshold, e.g. task_paused_abandoned.maxMs=2h (repeatable)',
      collect,
      [],
    )
    .option('--rule <name>', 'evaluate only this rule (repeatable)', collect, [])
    .option('--at <time>', 'evaluate at this time (ISO 8601 or epoch ms) instead of now')
    .option('--limit <n>', 'largest number of actors listed per rule', '20')
    .option('--json', 'print JSON')
    .option('--exit-code', 'exit with status 1 when an alert fires')
    .action(async (opts: AlertsOptions): Promise<void> => {
      const thresholds: Record<string, Record<string, unknown>> = {};
      for (const text of opts.set) {
        try {
          const [rule, key, value] = parseThreshold(text);
          thresholds[rule] = { ...(thresholds[rule] ?? {}), [key]: value };
        } catch (error) {
          throw new CliOptionError('--set', (error as Error).message);
        }
      }
      const names = ALERT_RULES.map((r) => r.name as string);
      for (const rule of opts.rule) {
        if (!names.includes(rule)) {
          throw new CliOptionError('--rule', `unknown rule "${rule}"; rules: ${names.join(', ')}`);
        }
      }
      if (!/^\d{1,6}$/.test(opts.limit) || Number(opts.limit) < 1) {
        throw new CliOptionError('--limit', 'must be a whole number from 1 to 999999');
      }
      const now = opts.at === undefined ? Date.now() : parseWhen(opts.at, Date.now(), '--at');
      const { store, where } = openExistingStore(opts);
      const progress = progressLine();
      try {
        const results = await evaluateAlerts(store, {
          now,
          thresholds: thresholds,
          rules: opts.rule.length > 0 ? (opts.rule as AlertRuleName[]) : undefined,
          limit: Number(opts.limit),
          onRule: (rule, index, total) =>
            progress.update(`evaluating rule ${index + 1}/${total} ${rule}…`),
        });
        progress.done();
        const firing = results.filter((r) => r.firing);
        const effective = (name: AlertRuleName) => {
          const rule = ALERT_RULES.find((r) => r.name === name);
          return { ...(rule?.defaults ?? {}), ...(thresholds[name] ?? {}) };
        };
        if (opts.json) {
          const out = {
            store: where,
            at: new Date(now).toISOString(),
            firing: firing.length,
            rules: results.map((r) => ({ ...r, thresholds: effective(r.rule) })),
          };
          process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
        } else {
          const lines = [`alerts ${where} at ${new Date(now).toISOString()}`];
          lines.push(
            table(
              ['rule', 'severity', 'status', 'count', 'thresholds'],
              results.map((r) => [
                r.rule,
                r.severity,
                r.firing ? 'FIRING' : 'ok',
                `${r.instances.length}${r.truncated ? '+' : ''}`,
                Object.entries(effective(r.rule))
                  .map(([k, v]) => `${k}=${showThreshold(k, v)}`)
                  .join(' '),
              ]),
            ),
          );
          for (const r of firing) {
            const rule = ALERT_RULES.find((x) => x.name === r.rule);
            lines.push('');
            lines.push(`FIRING ${r.rule} (${r.severity}): ${rule?.meaning ?? ''}`);
            lines.push(`  action: ${rule?.action ?? ''}`);
            for (const i of r.instances) lines.push(`  ${i.message}`);
            if (r.truncated) lines.push(`  … more (raise --limit)`);
          }
          if (firing.length === 0) lines.push('no alert fires');
          process.stdout.write(`${lines.join('\n')}\n`);
        }
        if (opts.exitCode && firing.length > 0) process.exitCode = 1;
      } finally {
        progress.done();
        await store.close();
      }
    });
}
