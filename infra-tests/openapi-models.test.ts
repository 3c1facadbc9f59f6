/** OpenAPI -> API Gateway draft-4 models: `$ref`s inlined, unsupported keywords refused. */
import { JsonSchemaType } from 'aws-cdk-lib/aws-apigateway';
import { OpenApiModelError } from '../cdk/lib/errors';
import { modelSchema, toDraft4 } from '../cdk/lib/openapi-models';
import openapi from '../lambdas/api/openapi.json';

describe('modelSchema(SignRequestInput)', () => {
  const model = modelSchema('SignRequestInput');

  it('inlines every $ref (no reference survives)', () => {
    expect(JSON.stringify(model)).not.toContain('$ref');
    expect(model.properties?.digestAlgorithm).toMatchObject({
      type: JsonSchemaType.STRING,
      enum: openapi.components.schemas.DigestAlgorithm.enum,
    });
    expect(model.properties?.keyType?.enum).toEqual(openapi.components.schemas.KeyType.enum);
  });

  it('keeps what the gateway must enforce: required fields, closed objects, lengths, patterns', () => {
    expect(model.required).toEqual(openapi.components.schemas.SignRequestInput.required);
    expect(model.additionalProperties).toBe(false);
    expect(model.properties?.digest).toMatchObject({
      minLength: 1,
      maxLength: 100,
      pattern: '^[A-Za-z0-9+/]+={0,2}$',
    });
    // The gateway refuses the spellings the handler refuses (lambdas/api/tests/assertion-pattern.test.ts):
    // the pattern uses only classes, groups and counted repetition, read alike by Java and ECMAScript.
    expect(model.properties?.identityAssertion?.pattern).toBe(
      openapi.components.schemas.SignRequestInput.properties.identityAssertion.pattern,
    );
  });
});

describe('toDraft4', () => {
  it('refuses keywords API Gateway models cannot express', () => {
    expect(() => toDraft4({ discriminator: { propertyName: 'kind' } }, {})).toThrow(OpenApiModelError);
    expect(() => toDraft4({ type: 'string', nullable: true }, {})).toThrow(OpenApiModelError);
  });

  it('keeps the draft-4 combinators: oneOf, anyOf, allOf, not', () => {
    expect(
      toDraft4({ oneOf: [{ required: ['a'], not: { required: ['b'] } }, { required: ['b'] }] }, {}),
    ).toEqual({
      oneOf: [{ required: ['a'], not: { required: ['b'] } }, { required: ['b'] }],
    });
  });

  it('refuses Unicode property escapes in patterns', () => {
    expect(() => toDraft4({ type: 'string', pattern: '^\\p{Script=Latin}+$' }, {})).toThrow(/not portable/);
    expect(toDraft4({ type: 'string', pattern: '^[\\p{L}\\p{M}]+$' }, {})).toEqual({
      type: JsonSchemaType.STRING,
      pattern: '^[\\p{L}\\p{M}]+$',
    });
  });

  it('refuses recursive and dangling references', () => {
    const schemas = { Node: { type: 'object', properties: { next: { $ref: '#/components/schemas/Node' } } } };
    expect(() => toDraft4({ $ref: '#/components/schemas/Node' }, schemas, [])).toThrow(/recursive/);
    expect(() => toDraft4({ $ref: '#/components/schemas/Missing' }, {})).toThrow(/missing/);
  });
});
