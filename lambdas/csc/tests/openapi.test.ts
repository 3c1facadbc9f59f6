/**
 * The CSC API's OpenAPI description (lambdas/api/csc-openapi.json) describes exactly the routes the
 * resources define (CSC_ROUTES, which the gateway and the function serve), and its error schema exactly
 * the CSC errors the service answers (CSC_ERRORS).
 */
import { CSC_ERRORS } from '@pipeline/core/csc';
import { CSC_ROUTES } from '@pipeline/resources';
import openapi from '../../api/csc-openapi.json';

describe('csc-openapi.json', () => {
  it('has one operation per CSC route, and no other', () => {
    const described = Object.entries(openapi.paths).flatMap(([path, operations]) =>
      Object.keys(operations).map((method) => `${method.toUpperCase()} ${path}`),
    );
    expect(described.sort()).toEqual(CSC_ROUTES.map((r) => `${r.method} ${r.resource}`).sort());
  });

  it('lists the CSC errors the service answers', () => {
    expect([...openapi.components.schemas.Error.properties.error.enum].sort()).toEqual(
      Object.keys(CSC_ERRORS).sort(),
    );
  });

  it('names the CSC version the service states', () => {
    expect(openapi.components.schemas.Info.properties.specs.enum).toEqual(['2.0.0.2']);
  });
});
