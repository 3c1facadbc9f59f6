/**
 * The two OpenAPI documents (lambdas/api/openapi.json, lambdas/api/csc-openapi.json) as generated clients
 * and OpenAPI 3.0 tools read them: patterns that compile without ECMAScript's `u` flag, no keyword
 * beside `$ref` (ignored there), the deployment's security (API key and SigV4) as one requirement, and
 * responses that cover what the gateway answers any operation (413 for a body over the limit, ...).
 */
import cscOpenapi from '../lambdas/api/csc-openapi.json';
import openapi from '../lambdas/api/openapi.json';

type Node = Record<string, unknown>;
interface Operation {
  readonly label: string;
  readonly responses: Record<string, Node>;
  readonly security?: Record<string, string[]>[];
  readonly requestBody?: unknown;
}

const DOCUMENTS: Record<string, Node> = {
  'openapi.json': openapi as unknown as Node,
  'csc-openapi.json': cscOpenapi as unknown as Node,
};
const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'];

/** Every object in the document with its JSON pointer. */
function* objects(node: unknown, pointer = ''): Generator<[string, Node]> {
  if (Array.isArray(node)) {
    for (const [i, item] of node.entries()) yield* objects(item, `${pointer}/${i}`);
  } else if (typeof node === 'object' && node !== null) {
    yield [pointer, node as Node];
    for (const [key, value] of Object.entries(node)) yield* objects(value, `${pointer}/${key}`);
  }
}

function operations(document: Node): Operation[] {
  return Object.entries(document.paths as Record<string, Node>).flatMap(([path, item]) =>
    METHODS.filter((m) => m in item).map((m) => ({
      label: `${m.toUpperCase()} ${path}`,
      ...(item[m] as Omit<Operation, 'label'>),
    })),
  );
}

/** The response an operation declares for a status, `$ref` to components/responses followed. */
function response(document: Node, operation: Operation, status: string): Node | undefined {
  const declared = operation.responses[status];
  if (!declared || typeof declared.$ref !== 'string') return declared;
  const name = /^#\/components\/responses\/(\w+)$/.exec(declared.$ref)?.[1] ?? '';
  return ((document.components as Node).responses as Record<string, Node>)[name];
}

describe.each(Object.entries(DOCUMENTS))('%s', (_name, document) => {
  const patterns = [...objects(document)].filter(([, node]) => typeof node.pattern === 'string');

  it('has patterns, each a regular expression without the u flag (as generated clients compile it) and with it', () => {
    const invalid = (pattern: string, flags?: string): boolean => {
      try {
        new RegExp(pattern, flags);
        return false;
      } catch {
        return true;
      }
    };
    expect(patterns.length).toBeGreaterThan(0);
    const failing = patterns
      .filter(([, node]) => invalid(node.pattern as string) || invalid(node.pattern as string, 'u'))
      .map(([pointer]) => pointer);
    expect(failing).toEqual([]);
  });

  it('has nothing beside a $ref (OpenAPI 3.0 ignores it: a description goes in an allOf wrapper)', () => {
    const withSiblings = [...objects(document)]
      .filter(([, node]) => '$ref' in node && Object.keys(node).length > 1)
      .map(([pointer]) => pointer);
    expect(withSiblings).toEqual([]);
  });

  it('declares 429 for every operation (throttles apply to each method) and 400 for every one with a body', () => {
    const missing = operations(document).flatMap((op) => [
      ...(op.responses['429'] ? [] : [`${op.label} 429`]),
      ...(op.requestBody && !op.responses['400'] ? [`${op.label} 400`] : []),
    ]);
    expect(missing).toEqual([]);
  });
});

describe('openapi.json', () => {
  const ops = operations(openapi as unknown as Node);
  const document = openapi as unknown as Node;

  it('requires the API key and SigV4 together: one requirement object with both (health also anonymously)', () => {
    expect(openapi.security).toEqual([{ apiKey: [], sigv4: [] }]);
    for (const op of ops) {
      for (const requirement of op.security ?? openapi.security) {
        if (Object.keys(requirement).length > 0)
          expect(Object.keys(requirement).sort()).toEqual(['apiKey', 'sigv4']);
      }
    }
  });

  it('declares what the gateway answers any operation: 403, 429, 500, 503; 401 where credentials are required; 413 (over the limit, whatever the schema) and 415 with a body', () => {
    const missing = ops.flatMap((op) => {
      const anonymous = (op.security ?? openapi.security).some((r) => Object.keys(r).length === 0);
      const expected = [
        '400',
        '403',
        '429',
        '500',
        '503',
        ...(anonymous ? [] : ['401']),
        ...(op.requestBody ? ['413', '415'] : []),
      ];
      return expected.filter((status) => !op.responses[status]).map((status) => `${op.label} ${status}`);
    });
    expect(missing).toEqual([]);
    // A body can match the schema and still be over the limit: the 413 says so.
    for (const op of ops.filter((o) => o.requestBody)) {
      expect(response(document, op, '413')?.description).toMatch(/PAYLOAD_TOO_LARGE.*whatever its schema/);
    }
  });

  it('describes the 400 a schema-valid sign request may get: ASSERTION_* for a well-formed assertion, SIGN_MESSAGE_INVALID beyond the BMP', () => {
    const create = ops.find((o) => o.label === 'POST /v1/sign-requests');
    if (!create) throw new Error('no POST /v1/sign-requests in openapi.json');
    const description = String(response(document, create, '400')?.description);
    expect(description).toMatch(/matches it is refused 400 only for .*ASSERTION_\*.*SIGN_MESSAGE_INVALID/);
  });
});
