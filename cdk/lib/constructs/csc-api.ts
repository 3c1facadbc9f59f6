import { Stack } from 'aws-cdk-lib';
import * as apigw from 'aws-cdk-lib/aws-apigateway';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import { Construct, type IDependable } from 'constructs';
import { loggedStageOptions } from './stage-logging';
import type { CscCallerLimits } from '@pipeline/config';
import { CSC_ERRORS, cscErrorFor, type CscErrorCode } from '@pipeline/core/csc';
import { messageOf } from '@pipeline/core/shared';
import { API_STAGE, CSC_BASE_PATH, CSC_ROUTES } from '@pipeline/resources';
import { GATEWAY_RESPONSES } from './api';
import { CscApiLimits } from './csc-api-limits';

export interface CscApiProps {
  readonly handler: lambda.IFunction;
  /** Each method's throttle (the stage's, applied per method). */
  readonly throttle: { readonly rateLimit: number; readonly burstLimit: number };
  /** Each source's and each client's limits (the stage's web ACL, CscApiLimits). */
  readonly callerLimits: CscCallerLimits;
  /** What the stage waits for: the account's CloudWatch role for API Gateway logs (the sign request API's). */
  readonly logsRole?: IDependable;
}

/**
 * The CSC API v2: CSC_ROUTES under CSC_BASE_PATH on the CSC function, stage `v1`, a REST API of its own
 * because gateway responses are per API: every answer API Gateway gives itself here (unknown method,
 * throttle, integration failure) is in the CSC form `{ error, error_description }` (CSC_GATEWAY_RESPONSES),
 * as the function's own. No IAM or API key: CSC clients authenticate to the function (OAuth 2.0 client
 * secret, bearer access tokens), and the identity provider's callback is the citizen's browser. No request
 * validation at the gateway either: the function answers every refusal in the CSC form. Access logs and
 * ERROR-level execution logs without data tracing, as the sign request API. The stage's throttle is
 * shared by all callers: its web ACL (CscApiLimits) limits each source and each client below it.
 */
export class CscApi extends Construct {
  public readonly restApi: apigw.RestApi;
  public readonly limits: CscApiLimits;

  public constructor(scope: Construct, id: string, props: CscApiProps) {
    super(scope, id);
    this.restApi = new apigw.RestApi(this, 'RestApi', {
      // Stage metrics are keyed by API name: not the sign request API's.
      restApiName: `${Stack.of(this).stackName}-csc`,
      description: 'HSM signing pipeline: CSC API v2',
      endpointTypes: [apigw.EndpointType.REGIONAL],
      // The account's one CloudWatch role for API Gateway is the sign request API's (logsRole).
      cloudWatchRole: false,
      deployOptions: {
        stageName: API_STAGE,
        ...loggedStageOptions(this, 'AccessLogs'),
        // No API key, so no usage plan: the stage's throttle, which API Gateway applies to each method.
        throttlingRateLimit: props.throttle.rateLimit,
        throttlingBurstLimit: props.throttle.burstLimit,
      },
    });
    if (props.logsRole) this.restApi.deploymentStage.node.addDependency(props.logsRole);
    this.limits = new CscApiLimits(this, 'Limits', {
      stage: this.restApi.deploymentStage,
      limits: props.callerLimits,
    });
    const integration = new apigw.LambdaIntegration(props.handler, { proxy: true, allowTestInvoke: false });
    for (const route of CSC_ROUTES) {
      this.restApi.root
        .resourceForPath(`${CSC_BASE_PATH}${route.resource}`)
        .addMethod(route.method, integration, {
          authorizationType: apigw.AuthorizationType.NONE,
          apiKeyRequired: false,
        });
    }
    for (const [type, response] of Object.entries(CSC_GATEWAY_RESPONSES)) {
      this.restApi.addGatewayResponse(type, {
        type: apigw.ResponseType.of(type),
        statusCode: response.keepStatus ? undefined : String(CSC_ERRORS[response.error]),
        responseHeaders: response.headers,
        templates: {
          'application/json': JSON.stringify({
            error: response.error,
            error_description: response.description,
          }),
        },
      });
    }
  }

  /** The CSC base URL on the API's own host (`…/v1/csc/v2`). */
  public get baseUrl(): string {
    return this.restApi.urlForPath(CSC_BASE_PATH);
  }
}

interface CscGatewayResponse {
  readonly error: CscErrorCode;
  readonly description: string;
  readonly headers?: Record<string, string>;
  /** API Gateway's own status for the type (the catch-alls), not the error's. */
  readonly keepStatus?: boolean;
}

/**
 * API Gateway's own answers in the CSC form: each of the sign request API's (GATEWAY_RESPONSES), its client
 * code mapped as the function maps it (cscErrorFor), at that CSC error's status, with its headers. The
 * 4XX catch-all (a WAF block, a type without its own entry) is `invalid_request` at the gateway's status.
 */
export const CSC_GATEWAY_RESPONSES: Readonly<Record<string, CscGatewayResponse>> = Object.fromEntries(
  Object.entries(GATEWAY_RESPONSES).map(([type, response]) => [
    type,
    {
      error: type === 'DEFAULT_4XX' ? 'invalid_request' : cscErrorFor(response.code),
      ...(response.status === undefined ? { keepStatus: true } : {}),
      // No SigV4 here: an unknown route or method is all a missing token can mean.
      description:
        type === 'MISSING_AUTHENTICATION_TOKEN'
          ? 'no such CSC method'
          : (response.message ?? messageOf(response.code)),
      ...(response.headers ? { headers: response.headers } : {}),
    },
  ]),
);
