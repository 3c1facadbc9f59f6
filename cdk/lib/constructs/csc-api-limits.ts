import type { CscCallerLimits } from '@pipeline/config';
import { CSC_ERRORS } from '@pipeline/core/csc';
import { CSC_AUTHORIZE_RESOURCES, CSC_BASE_PATH } from '@pipeline/resources';
import { aws_wafv2 as wafv2 } from 'aws-cdk-lib';
import type * as apigw from 'aws-cdk-lib/aws-apigateway';
import { Construct } from 'constructs';

/** The key of the web ACL's custom response body: the CSC form of a throttle. */
export const CSC_TOO_MANY_BODY_KEY = 'CscTooManyRequests';

/** What a blocked caller reads: the CSC error form, as the function and the gateway answer. */
export const CSC_TOO_MANY_BODY = {
  error: 'too_many_requests',
  error_description: 'too many requests from this source or for this client, retry in a minute',
} as const;

/**
 * The CSC API's limits per caller (CscCallerLimits, each per minute): a regional web ACL on the CscApi
 * stage, because the stage's throttle is one for all callers and anyone could spend it. Rate-based
 * rules, each answered 429 in the CSC form with Retry-After:
 *   - PerSource: every CSC method, per source address;
 *   - AuthorizePerSource: oauth2/authorize and oauth2/pushed_authorize, lower (each writes an item
 *     before any authentication);
 *   - PerClient: per `client_id` query argument (oauth2/authorize names its client there);
 *   - PerClientCredentials: under oauth2/, per Authorization header (a client's HTTP Basic credentials
 *     at pushed_authorize and token).
 * WAF cannot aggregate on a form field of the body: a client_id posted in the form is limited per
 * source only. A request without the key a rule aggregates on is not counted by that rule.
 */
export class CscApiLimits extends Construct {
  public readonly webAcl: wafv2.CfnWebACL;

  public constructor(
    scope: Construct,
    id: string,
    props: { readonly stage: apigw.Stage; readonly limits: CscCallerLimits },
  ) {
    super(scope, id);
    const { limits } = props;
    const visibility = (metricName: string): wafv2.CfnWebACL.VisibilityConfigProperty => ({
      cloudWatchMetricsEnabled: true,
      metricName,
      sampledRequestsEnabled: true,
    });
    const none = [{ priority: 0, type: 'NONE' }];
    const pathEndsWith = (suffix: string): wafv2.CfnWebACL.StatementProperty => ({
      byteMatchStatement: {
        fieldToMatch: { uriPath: {} },
        positionalConstraint: 'ENDS_WITH',
        searchString: `${CSC_BASE_PATH}${suffix}`,
        textTransformations: none,
      },
    });
    const tooMany: wafv2.CfnWebACL.RuleActionProperty = {
      block: {
        customResponse: {
          responseCode: CSC_ERRORS.too_many_requests,
          customResponseBodyKey: CSC_TOO_MANY_BODY_KEY,
          responseHeaders: [{ name: 'Retry-After', value: '60' }],
        },
      },
    };
    const rule = (
      name: string,
      priority: number,
      rateBasedStatement: wafv2.CfnWebACL.RateBasedStatementProperty,
    ): wafv2.CfnWebACL.RuleProperty => ({
      name,
      priority,
      action: tooMany,
      statement: { rateBasedStatement: { evaluationWindowSec: 60, ...rateBasedStatement } },
      visibilityConfig: visibility(`Csc${name}`),
    });
    this.webAcl = new wafv2.CfnWebACL(this, 'WebAcl', {
      scope: 'REGIONAL',
      description: 'CSC API v2: rate-limited per source address and per client',
      defaultAction: { allow: {} },
      visibilityConfig: visibility('CscApiLimits'),
      customResponseBodies: {
        [CSC_TOO_MANY_BODY_KEY]: {
          contentType: 'APPLICATION_JSON',
          content: JSON.stringify(CSC_TOO_MANY_BODY),
        },
      },
      rules: [
        rule('PerSource', 0, { limit: limits.sourcePerMinute, aggregateKeyType: 'IP' }),
        rule('AuthorizePerSource', 1, {
          limit: limits.authorizeSourcePerMinute,
          aggregateKeyType: 'IP',
          scopeDownStatement: { orStatement: { statements: CSC_AUTHORIZE_RESOURCES.map(pathEndsWith) } },
        }),
        rule('PerClient', 2, {
          limit: limits.clientPerMinute,
          aggregateKeyType: 'CUSTOM_KEYS',
          customKeys: [{ queryArgument: { name: 'client_id', textTransformations: none } }],
        }),
        rule('PerClientCredentials', 3, {
          limit: limits.clientPerMinute,
          aggregateKeyType: 'CUSTOM_KEYS',
          customKeys: [{ header: { name: 'authorization', textTransformations: none } }],
          scopeDownStatement: {
            byteMatchStatement: {
              fieldToMatch: { uriPath: {} },
              positionalConstraint: 'CONTAINS',
              searchString: `${CSC_BASE_PATH}/oauth2/`,
              textTransformations: none,
            },
          },
        }),
      ],
    });
    new wafv2.CfnWebACLAssociation(this, 'Association', {
      resourceArn: props.stage.stageArn,
      webAclArn: this.webAcl.attrArn,
    });
  }
}
