/**
 * The benchmarks' counting proxy, in a process of its own (its CPU is not the service's): it stands in
 * front of DynamoDB Local, ElasticMQ and the local Lambda Invoke endpoint, forwards every request
 * unchanged, and counts AWS API calls by operation, DynamoDB item operations (each item read or written,
 * inside batches and transactions too) and Lambda invocations by function (with the items of the CA's
 * batches). The parent asks over IPC: `{ add: { service, target } }` -> `{ url }`, `{ read: true }` ->
 * the counts so far.
 */
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ProxyCounts {
  /** AWS API calls by service and operation (`dynamodb.PutItem`, `sqs.SendMessage`, `lambda.Invoke`). */
  readonly calls: Record<string, number>;
  /** DynamoDB items read or written (a batch or transaction counts its items). */
  readonly tableItemOps: number;
  readonly tableReadItems: number;
  /**
   * DynamoDB items by operation and table (`PutItem requests`, `TransactWriteItems audit`; a BatchGetItem
   * of some attributes only as `BatchGetItem <table> (projection)`).
   */
  readonly tableItemsByOperation: Record<string, number>;
  /** Lambda invocations by function name, and the items the CA's batch invocations carried. */
  readonly invocations: Record<string, number>;
  readonly caBatchItems: number;
}

const counts = {
  calls: {} as Record<string, number>,
  tableItemOps: 0,
  tableReadItems: 0,
  tableItemsByOperation: {} as Record<string, number>,
  invocations: {} as Record<string, number>,
  caBatchItems: 0,
};
const READS = new Set(['GetItem', 'BatchGetItem', 'Query', 'Scan', 'TransactGetItems']);
const add = (map: Record<string, number>, key: string, n = 1): void => {
  map[key] = (map[key] ?? 0) + n;
};

function itemsOf(op: string, body: Record<string, unknown>, response: Record<string, unknown>): number {
  const sum = (o: unknown, f: (v: unknown) => number): number =>
    Object.values((o as Record<string, unknown>) ?? {}).reduce<number>((n, v) => n + f(v), 0);
  switch (op) {
    case 'BatchGetItem':
      return sum(body.RequestItems, (t) => ((t as { Keys?: unknown[] }).Keys ?? []).length);
    case 'BatchWriteItem':
      return sum(body.RequestItems, (t) => (t as unknown[]).length);
    case 'TransactWriteItems':
    case 'TransactGetItems':
      return ((body.TransactItems as unknown[]) ?? []).length;
    case 'Query':
    case 'Scan':
      return Math.max(1, Number(response.Count ?? 0));
    default:
      return 1;
  }
}

/** Items per table of one call. */
function itemsByTable(op: string, body: Record<string, unknown>): Record<string, number> {
  const out: Record<string, number> = {};
  const put = (table: unknown, n = 1): void => {
    const name = String(table ?? '?');
    out[name] = (out[name] ?? 0) + n;
  };
  if (op === 'BatchGetItem' || op === 'BatchWriteItem') {
    // A read of some attributes only (admission's open counts) is named apart from whole-item reads.
    for (const [table, v] of Object.entries((body.RequestItems as Record<string, unknown>) ?? {}))
      put(
        op === 'BatchGetItem' && (v as { ProjectionExpression?: string }).ProjectionExpression
          ? `${table} (projection)`
          : table,
        op === 'BatchGetItem' ? ((v as { Keys?: unknown[] }).Keys ?? []).length : (v as unknown[]).length,
      );
  } else if (op === 'TransactWriteItems' || op === 'TransactGetItems') {
    for (const item of (body.TransactItems as Array<Record<string, { TableName?: string }>>) ?? [])
      put(Object.values(item)[0]?.TableName);
  } else put(body.TableName);
  return out;
}

function count(service: string, req: IncomingMessage, body: Buffer, response: Buffer): void {
  const parse = (b: Buffer): Record<string, unknown> => {
    try {
      return JSON.parse(b.toString('utf8')) as Record<string, unknown>;
    } catch {
      return {};
    }
  };
  if (service === 'lambda') {
    const fn = /\/functions\/([^/]+)\/invocations/.exec(req.url ?? '')?.[1];
    if (!fn) return;
    add(counts.calls, 'lambda.Invoke');
    add(counts.invocations, decodeURIComponent(fn));
    const payload = parse(body);
    if (payload.action === 'issue-batch') counts.caBatchItems += ((payload.items as unknown[]) ?? []).length;
    return;
  }
  const target = String(req.headers['x-amz-target'] ?? '');
  const op = target.split('.').pop() || new URLSearchParams(body.toString('utf8')).get('Action') || 'unknown';
  add(counts.calls, `${service}.${op}`);
  if (service === 'dynamodb') {
    const request = parse(body);
    const items = itemsOf(op, request, parse(response));
    counts.tableItemOps += items;
    if (READS.has(op)) counts.tableReadItems += items;
    for (const [table, n] of Object.entries(itemsByTable(op, request)))
      add(counts.tableItemsByOperation, `${op} ${table}`, n);
  }
}

async function proxy(service: string, target: string): Promise<string> {
  const to = new URL(target);
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const upstream = httpRequest(
        { host: to.hostname, port: to.port, method: req.method, path: req.url, headers: req.headers },
        (up) => {
          const out: Buffer[] = [];
          up.on('data', (c: Buffer) => out.push(c));
          up.on('end', () => {
            const response = Buffer.concat(out);
            count(service, req, body, response);
            res.writeHead(up.statusCode ?? 502, up.headers);
            res.end(response);
          });
        },
      );
      upstream.on('error', () => {
        res.writeHead(502);
        res.end();
      });
      upstream.end(body);
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

if (require.main === module) {
  process.on('message', (message: { id: number; add?: { service: string; target: string }; read?: true }) => {
    const reply = (value: unknown): void => void process.send?.({ id: message.id, value });
    if (message.add) void proxy(message.add.service, message.add.target).then((url) => reply({ url }));
    else if (message.read) reply(JSON.parse(JSON.stringify(counts)) as ProxyCounts);
  });
  process.on('disconnect', () => process.exit(0));
  process.send?.({ id: 0, value: 'ready' });
}
