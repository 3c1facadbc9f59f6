/**
 * The PKI distribution's per-source limit (cdk/bin/pki-edge.ts): a CloudFront-scope web ACL in us-east-1,
 * the only region where AWS accepts one, covering the cached CRLs and CA certificates as well as OCSP and
 * the TSA, and its ARN as the output the pipeline stack's pkiEdgeWebAclArn takes.
 */
import { PKI_SOURCE_LIMITS } from '@pipeline/resources';
import { Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { createPkiEdgeApp } from '../cdk/lib/pki-edge-stack';
import { resources } from './support/synth';

const { stack } = createPkiEdgeApp();
const template = Template.fromStack(stack);

it('is a stack of us-east-1', () => {
  expect(stack.region).toBe('us-east-1');
});

it('limits every viewer address per minute at CloudFront scope, answering 429', () => {
  const acls = Object.values(resources(template, 'AWS::WAFv2::WebACL'));
  expect(acls).toHaveLength(1);
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- synthesized CloudFormation JSON is untyped
  const acl = acls[0].Properties as Record<string, any>;
  expect(acl.Scope).toBe('CLOUDFRONT');
  expect(acl.DefaultAction).toEqual({ Allow: {} });
  expect(acl.Rules).toHaveLength(1);
  expect(acl.Rules[0].Action).toEqual({ Block: { CustomResponse: { ResponseCode: 429 } } });
  expect(acl.Rules[0].Statement.RateBasedStatement).toEqual({
    Limit: PKI_SOURCE_LIMITS.requestsPerMinute,
    EvaluationWindowSec: 60,
    AggregateKeyType: 'IP',
  });
});

it("outputs the web ACL's ARN for the pipeline stack", () => {
  const outputs = template.findOutputs('PkiEdgeWebAclArn');
  const aclId = Object.keys(resources(template, 'AWS::WAFv2::WebACL'))[0];
  expect(Object.values(outputs)[0].Value).toEqual({ 'Fn::GetAtt': [aclId, 'Arn'] });
});

it('passes cdk-nag with no acknowledgement', () => {
  const report = new AwsSolutionsChecks().validateScope(stack);
  expect(report.violations.map((v) => v.ruleName)).toEqual([]);
});
