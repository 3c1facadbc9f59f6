/**
 * OpenAPI 3.0 schemas -> API Gateway models (JSON Schema draft 4), so the gateway rejects malformed
 * bodies before the function runs, from the same document the handler's validator uses. `$ref`s are
 * inlined (API Gateway models could reference each other only by model URL), and any keyword API
 * Gateway does not understand is refused rather than silently dropped.
 */
import { JsonSchemaType, JsonSchemaVersion, type JsonSchema } from 'aws-cdk-lib/aws-apigateway';
import openapi from '../../lambdas/api/openapi.json';
import { OpenApiModelError } from './errors';

export type OpenApiSchema = Record<string, unknown>;

const SCHEMAS = openapi.components.schemas as unknown as Record<string, OpenApiSchema>;
const TYPES: Record<string, JsonSchemaType> = {
  object: JsonSchemaType.OBJECT,
  array: JsonSchemaType.ARRAY,
  string: JsonSchemaType.STRING,
  integer: JsonSchemaType.INTEGER,
  number: JsonSchemaType.NUMBER,
  boolean: JsonSchemaType.BOOLEAN,
};
/** OpenAPI keywords copied as they are (same meaning in draft 4). */
const PLAIN = [
  'description',
  'enum',
  'minLength',
  'maxLength',
  'minimum',
  'maximum',
  'required',
  'minItems',
  'maxItems',
];

/** The draft-4 model of a named component schema. */
export function modelSchema(name: string): JsonSchema {
  const schema = SCHEMAS[name];
  if (!schema) throw new OpenApiModelError(`no schema ${name} in the OpenAPI document`);
  return { schema: JsonSchemaVersion.DRAFT4, title: name, ...toDraft4(schema, SCHEMAS, [name]) };
}

function refName(ref: string): string {
  const match = /^#\/components\/schemas\/([A-Za-z0-9_]+)$/.exec(ref);
  if (!match) throw new OpenApiModelError(`unsupported $ref ${ref}`);
  return match[1];
}

/** Converts one OpenAPI schema, inlining `$ref`s from `schemas`. */
export function toDraft4(
  schema: OpenApiSchema,
  schemas: Record<string, OpenApiSchema>,
  trail: string[] = [],
): JsonSchema {
  const convert = (sub: OpenApiSchema, subTrail: string[]): JsonSchema => toDraft4(sub, schemas, subTrail);
  if (typeof schema.$ref === 'string') {
    const name = refName(schema.$ref);
    if (trail.includes(name))
      throw new OpenApiModelError(`recursive schema ${[...trail, name].join(' -> ')}`);
    const target = schemas[name];
    if (!target) throw new OpenApiModelError(`$ref to missing schema ${name}`);
    return convert(target, [...trail, name]);
  }
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    if (PLAIN.includes(key)) out[key] = value;
    else if (key === 'type') {
      const type = TYPES[value as string];
      if (!type) throw new OpenApiModelError(`unsupported type ${String(value)} in ${trail.join('.')}`);
      out.type = type;
    } else if (key === 'pattern') {
      // API Gateway evaluates patterns with Java regular expressions: of the Unicode property escapes only
      // the one-letter general categories (\p{L}, \p{M}, ...) mean the same there as in ECMAScript.
      const escapes = (value as string).match(/\\[pP]\{[^}]*\}/g) ?? [];
      const foreign = escapes.find((e) => !/^\\[pP]\{[LMNPSZC]\}$/.test(e));
      if (foreign) {
        throw new OpenApiModelError(
          `pattern with ${foreign} in ${trail.join('.')} is not portable to API Gateway`,
        );
      }
      out.pattern = value;
    } else if (key === 'properties') {
      out.properties = Object.fromEntries(
        Object.entries(value as Record<string, OpenApiSchema>).map(([prop, sub]) => [
          prop,
          convert(sub, [...trail, prop]),
        ]),
      );
    } else if (key === 'oneOf' || key === 'anyOf' || key === 'allOf') {
      out[key] = (value as OpenApiSchema[]).map((sub, i) => convert(sub, [...trail, `${key}[${i}]`]));
    } else if (key === 'not') {
      out.not = convert(value as OpenApiSchema, [...trail, 'not']);
    } else if (key === 'items') {
      out.items = convert(value as OpenApiSchema, [...trail, '[]']);
    } else if (key === 'additionalProperties') {
      out.additionalProperties =
        typeof value === 'boolean' ? value : convert(value as OpenApiSchema, [...trail, '*']);
    } else if (key === 'format') {
      // draft-4 formats are advisory in API Gateway; the handler's validator enforces them.
      continue;
    } else {
      throw new OpenApiModelError(`keyword ${key} in ${trail.join('.')} has no API Gateway model equivalent`);
    }
  }
  return out as JsonSchema;
}
