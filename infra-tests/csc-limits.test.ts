/**
 * The CSC API's limits per caller (CscApiLimits): a regional web ACL on the CscApi stage whose rate-based
 * rules limit each source address (tighter on the authorization endpoints) and each client, answering
 * 429 in the CSC error form. The construct alone, on a stand-in function: no stack synth.
 */
import { App, type CfnElement, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { AwsSolutionsChecks } from 'cdk-nag';
import { CSC_BASE_PATH } from '@pipeline/resources';
import { CscApi } from '../cdk/lib/constructs/csc-api';
import { resources } from './support/synth';

const LIMITS = { sourcePerMinute: 500, authorizeSourcePerMinute: 40, clientPerMinute: 300 };

const stack = new Stack(new App(), 'CscLimits', { env: { account: '123456789012', region: 'eu-north-1' } });
const api = new CscApi(stack, 'CscApi', {
  handler: new lambda.Function(stack, 'Fn', {
    runtime: lambda.Runtime.NODEJS_22_X,
    handler: 'index.handler',
    code: lambda.Code.fromInline('exports.handler = async () => ({ statusCode: 200 })'),
  }),
  throttle: { rateLimit: 20, burstLimit: 40 },
  callerLimits: LIMITS,
});
const template = Template.fromStack(stack);
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- synthesized CloudFormation JSON is untyped
const acl = Object.values(resources(template, 'AWS::WAFv2::WebACL'))[0]?.Properties as Record<string, any>;
const rule = (name: string) => acl.Rules.find((r: { Name: string }) => r.Name === name);

it('is one regional web ACL, associated with the CSC API stage', () => {
  expect(Object.keys(resources(template, 'AWS::WAFv2::WebACL'))).toHaveLength(1);
  expect(acl.Scope).toBe('REGIONAL');
  expect(acl.DefaultAction).toEqual({ Allow: {} });
  const associations = Object.values(resources(template, 'AWS::WAFv2::WebACLAssociation'));
  expect(associations).toHaveLength(1);
  const stageId = stack.getLogicalId(api.restApi.deploymentStage.node.defaultChild as CfnElement);
  expect(JSON.stringify(associations[0].Properties!.ResourceArn)).toContain(stageId);
  const aclId = Object.keys(resources(template, 'AWS::WAFv2::WebACL'))[0];
  expect(associations[0].Properties!.WebACLArn).toEqual({ 'Fn::GetAtt': [aclId, 'Arn'] });
});

it('limits every source per minute, and the authorization endpoints per source lower', () => {
  expect(rule('PerSource').Statement.RateBasedStatement).toEqual({
    Limit: LIMITS.sourcePerMinute,
    EvaluationWindowSec: 60,
    AggregateKeyType: 'IP',
  });
  const authorize = rule('AuthorizePerSource').Statement.RateBasedStatement;
  expect(authorize).toMatchObject({
    Limit: LIMITS.authorizeSourcePerMinute,
    EvaluationWindowSec: 60,
    AggregateKeyType: 'IP',
  });
  const paths = authorize.ScopeDownStatement.OrStatement.Statements.map(
    (s: {
      ByteMatchStatement: { FieldToMatch: unknown; PositionalConstraint: string; SearchString: string };
    }) => [
      s.ByteMatchStatement.FieldToMatch,
      s.ByteMatchStatement.PositionalConstraint,
      s.ByteMatchStatement.SearchString,
    ],
  );
  expect(paths).toEqual([
    [{ UriPath: {} }, 'ENDS_WITH', `${CSC_BASE_PATH}/oauth2/authorize`],
    [{ UriPath: {} }, 'ENDS_WITH', `${CSC_BASE_PATH}/oauth2/pushed_authorize`],
  ]);
});

it('limits every client per minute: by its client_id query argument, and by its Basic credentials under oauth2/', () => {
  expect(rule('PerClient').Statement.RateBasedStatement).toEqual({
    Limit: LIMITS.clientPerMinute,
    EvaluationWindowSec: 60,
    AggregateKeyType: 'CUSTOM_KEYS',
    CustomKeys: [
      { QueryArgument: { Name: 'client_id', TextTransformations: [{ Priority: 0, Type: 'NONE' }] } },
    ],
  });
  const credentials = rule('PerClientCredentials').Statement.RateBasedStatement;
  expect(credentials).toMatchObject({
    Limit: LIMITS.clientPerMinute,
    AggregateKeyType: 'CUSTOM_KEYS',
    CustomKeys: [{ Header: { Name: 'authorization', TextTransformations: [{ Priority: 0, Type: 'NONE' }] } }],
  });
  expect(credentials.ScopeDownStatement.ByteMatchStatement).toMatchObject({
    FieldToMatch: { UriPath: {} },
    PositionalConstraint: 'CONTAINS',
    SearchString: `${CSC_BASE_PATH}/oauth2/`,
  });
});

it('answers every blocked request 429 in the CSC form, with Retry-After', () => {
  expect(acl.Rules.map((r: { Name: string }) => r.Name)).toEqual([
    'PerSource',
    'AuthorizePerSource',
    'PerClient',
    'PerClientCredentials',
  ]);
  for (const r of acl.Rules) {
    expect(r.Action).toEqual({
      Block: {
        CustomResponse: {
          ResponseCode: 429,
          CustomResponseBodyKey: 'CscTooManyRequests',
          ResponseHeaders: [{ Name: 'Retry-After', Value: '60' }],
        },
      },
    });
    expect(r.VisibilityConfig).toMatchObject({
      CloudWatchMetricsEnabled: true,
      SampledRequestsEnabled: true,
    });
  }
  const body = acl.CustomResponseBodies.CscTooManyRequests;
  expect(body.ContentType).toBe('APPLICATION_JSON');
  expect(JSON.parse(body.Content as string)).toEqual({
    error: 'too_many_requests',
    error_description: expect.stringContaining('too many requests'),
  });
});

it('leaves cdk-nag nothing to say of the stage without a web ACL (AwsSolutions-APIG3)', () => {
  const report = new AwsSolutionsChecks().validateScope(stack);
  expect(report.violations.map((v) => v.ruleName)).not.toContain('AwsSolutions-APIG3');
});
