import { Stack, aws_wafv2 as wafv2 } from 'aws-cdk-lib';
import * as apigw from 'aws-cdk-lib/aws-apigateway';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import { Construct, type IDependable } from 'constructs';
import { API_STAGE, DSSEXT_BASE_PATH, DSSEXT_ROUTES } from '@pipeline/resources';
import type { DssExtSettings } from '../settings';
import { loggedStageOptions } from './stage-logging';

export interface DssExtApiProps {
  readonly handler: lambda.IFunction;
  /** The method throttle and the web ACL's limits per source. */
  readonly settings: Pick<
    DssExtSettings,
    'rateLimit' | 'burstLimit' | 'sourcePerMinute' | 'signSourcePerMinute'
  >;
  /** What the stage waits for: the account's CloudWatch role for API Gateway logs (the sign request API's). */
  readonly logsRole?: IDependable;
}

/** The key of the web ACL's custom response body: what a blocked browser shows. */
export const DSSEXT_TOO_MANY_BODY_KEY = 'DssExtTooManyRequests';

/**
 * The DSS-Ext door: DSSEXT_ROUTES under DSSEXT_BASE_PATH on the door function, stage `v1`, a REST API of
 * its own as the CSC API's (its own stage throttle, access logs and web ACL; the sign request API's
 * gateway responses are JSON for e-services, not pages for browsers). No IAM or API key: browsers post
 * the e-service's SignRequest and the identity provider's answer, and the function authenticates what
 * they carry (signatures against the registrations and the federation's metadata). No request
 * validation at the gateway: the function answers every refusal (a page, or a SignResponse to the
 * e-service). The stage's throttle is shared by all callers: its web ACL limits each source below it,
 * tighter on POST /sign, which keeps state (a RequestID, a login) before any citizen logs in.
 */
export class DssExtApi extends Construct {
  public readonly restApi: apigw.RestApi;
  public readonly webAcl: wafv2.CfnWebACL;

  public constructor(scope: Construct, id: string, props: DssExtApiProps) {
    super(scope, id);
    const { settings } = props;
    this.restApi = new apigw.RestApi(this, 'RestApi', {
      // Stage metrics are keyed by API name: not the sign request API's.
      restApiName: `${Stack.of(this).stackName}-dssext`,
      description: 'HSM signing pipeline: DSS-Ext door (Swedish eID framework)',
      endpointTypes: [apigw.EndpointType.REGIONAL],
      // The account's one CloudWatch role for API Gateway is the sign request API's (logsRole).
      cloudWatchRole: false,
      deployOptions: {
        stageName: API_STAGE,
        ...loggedStageOptions(this, 'AccessLogs'),
        // No API key, so no usage plan: the stage's throttle, which API Gateway applies to each method.
        throttlingRateLimit: settings.rateLimit,
        throttlingBurstLimit: settings.burstLimit,
      },
    });
    if (props.logsRole) this.restApi.deploymentStage.node.addDependency(props.logsRole);
    const integration = new apigw.LambdaIntegration(props.handler, { proxy: true, allowTestInvoke: false });
    for (const route of DSSEXT_ROUTES) {
      this.restApi.root
        .resourceForPath(`${DSSEXT_BASE_PATH}${route.resource}`)
        .addMethod(route.method, integration, {
          authorizationType: apigw.AuthorizationType.NONE,
          apiKeyRequired: false,
        });
    }
    this.webAcl = this.limitPerSource(settings);
  }

  /** The door's base URL on the API's own host (`…/v1/dss/v1`). */
  public get baseUrl(): string {
    return this.restApi.urlForPath(DSSEXT_BASE_PATH);
  }

  /**
   * A regional web ACL on the stage, rate-based rules per source address answered 429 with Retry-After:
   * PerSource on every method, SignPerSource on POST /sign. WAF cannot tell one e-service from another
   * (the SignRequester is inside a signed form field), so there is no rule per e-service.
   */
  private limitPerSource(settings: DssExtApiProps['settings']): wafv2.CfnWebACL {
    const visibility = (metricName: string): wafv2.CfnWebACL.VisibilityConfigProperty => ({
      cloudWatchMetricsEnabled: true,
      metricName,
      sampledRequestsEnabled: true,
    });
    const tooMany: wafv2.CfnWebACL.RuleActionProperty = {
      block: {
        customResponse: {
          responseCode: 429,
          customResponseBodyKey: DSSEXT_TOO_MANY_BODY_KEY,
          responseHeaders: [{ name: 'Retry-After', value: '60' }],
        },
      },
    };
    const webAcl = new wafv2.CfnWebACL(this, 'Limits', {
      scope: 'REGIONAL',
      description: 'DSS-Ext door: rate-limited per source address',
      defaultAction: { allow: {} },
      visibilityConfig: visibility('DssExtApiLimits'),
      customResponseBodies: {
        [DSSEXT_TOO_MANY_BODY_KEY]: {
          contentType: 'TEXT_PLAIN',
          content: 'Too many requests from this address: try again in a minute.',
        },
      },
      rules: [
        {
          name: 'PerSource',
          priority: 0,
          action: tooMany,
          statement: {
            rateBasedStatement: {
              limit: settings.sourcePerMinute,
              evaluationWindowSec: 60,
              aggregateKeyType: 'IP',
            },
          },
          visibilityConfig: visibility('DssExtPerSource'),
        },
        {
          name: 'SignPerSource',
          priority: 1,
          action: tooMany,
          statement: {
            rateBasedStatement: {
              limit: settings.signSourcePerMinute,
              evaluationWindowSec: 60,
              aggregateKeyType: 'IP',
              scopeDownStatement: {
                byteMatchStatement: {
                  fieldToMatch: { uriPath: {} },
                  positionalConstraint: 'ENDS_WITH',
                  searchString: `${DSSEXT_BASE_PATH}/sign`,
                  textTransformations: [{ priority: 0, type: 'NONE' }],
                },
              },
            },
          },
          visibilityConfig: visibility('DssExtSignPerSource'),
        },
      ],
    });
    new wafv2.CfnWebACLAssociation(this, 'LimitsAssociation', {
      resourceArn: this.restApi.deploymentStage.stageArn,
      webAclArn: webAcl.attrArn,
    });
    return webAcl;
  }
}
