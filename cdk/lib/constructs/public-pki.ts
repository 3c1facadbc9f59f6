import { Duration, Fn, RemovalPolicy, Stack } from 'aws-cdk-lib';
import * as apigw from 'aws-cdk-lib/aws-apigateway';
import * as cloudfront from 'aws-cdk-lib/aws-cloudfront';
import * as origins from 'aws-cdk-lib/aws-cloudfront-origins';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as wafv2 from 'aws-cdk-lib/aws-wafv2';
import { Construct } from 'constructs';
import { loggedStageOptions } from './stage-logging';
import { OCSP_ROUTES, PKI_SOURCE_LIMITS, TSA_RATE_LIMIT, TSA_ROUTES } from '@pipeline/resources';

/** The stage of the OCSP API: CloudFront's origin path, invisible to relying parties. */
const OCSP_STAGE = 'pki';

/** The header the distribution sets to the viewer's address (whatever the viewer sent in it). */
export const VIEWER_IP_HEADER = 'x-pki-viewer-ip';
/** The header the distribution adds to every request to the OCSP API, with a value of this stack's. */
export const ORIGIN_VERIFY_HEADER = 'x-pki-origin-verify';

/**
 * Sets the viewer-address header from the connection CloudFront saw (a viewer cannot choose it): an IPv4
 * address as it is, an IPv6 one as its /64 (one subscriber's prefix: its 2^64 addresses are one source).
 * CloudFront Functions JavaScript (runtime 2.0), kept to ES5.
 */
export const VIEWER_IP_FUNCTION = `function handler(event) {
  var request = event.request;
  var ip = event.viewer.ip;
  if (ip.indexOf(':') >= 0) {
    var halves = ip.split('::');
    var head = halves[0] ? halves[0].split(':') : [];
    var tail = halves.length > 1 && halves[1] ? halves[1].split(':') : [];
    var groups = head.slice();
    for (var i = head.length + tail.length; i < 8; i++) groups.push('0');
    groups = groups.concat(tail);
    ip = groups.slice(0, 4).join(':') + '::';
  }
  request.headers['${VIEWER_IP_HEADER}'] = { value: ip };
  return request;
}`;

/**
 * Where relying parties check certificates: one CloudFront distribution over plain HTTP and HTTPS (CRL
 * distribution points and AIA are fetched without TLS, RFC 5280 4.2.1.13 and 4.2.2.1), serving the CRLs
 * and CA certificates the crl function publishes to a private bucket (origin access control), and the OCSP
 * responder (RFC 6960 appendix A, GET and POST) through a public regional REST API. PKI_BASE_URL is the
 * distribution's root.
 */
export class PublicPki extends Construct {
  public readonly bucket: s3.Bucket;
  public readonly logBucket: s3.Bucket;
  public readonly ocspApi: apigw.RestApi;
  /** The OCSP API's web ACL: requests only through the distribution, rate-limited per source. */
  public readonly webAcl: wafv2.CfnWebACL;
  public readonly distribution: cloudfront.Distribution;
  /** The CloudFront-scope web ACL in front of the distribution (undefined only in a placeholder synth). */
  public readonly edgeWebAclArn?: string;
  /** The distribution's http:// URL (a token until deploy), unless a base URL was configured. */
  public readonly baseUrl: string;

  public constructor(
    scope: Construct,
    id: string,
    props: {
      ocspHandler: lambda.IFunction;
      tsaHandler: lambda.IFunction;
      baseUrl?: string;
      /** The CloudFront-scope web ACL limiting each source at the distribution (PkiEdgeStack). */
      edgeWebAclArn?: string;
    },
  ) {
    super(scope, id);
    this.edgeWebAclArn = props.edgeWebAclArn;
    this.logBucket = this.createLogBucket();
    this.bucket = this.createObjectBucket();
    this.ocspApi = this.createApi(props.ocspHandler, props.tsaHandler);
    // Per source, in front of OCSP and the TSA. Behind CloudFront the API sees edge addresses, so the
    // distribution names the viewer's in a header of its own (a CloudFront Function overwrites whatever
    // the viewer sent) and proves the request passed through it with a value only this stack knows (its
    // stack id's UUID); a request straight to the regional endpoint, without that value, is refused.
    const originVerify = Fn.select(2, Fn.split('/', Stack.of(this).stackId));
    this.webAcl = this.rateLimits(originVerify);
    new wafv2.CfnWebACLAssociation(this, 'RateLimitsAssociation', {
      resourceArn: this.ocspApi.deploymentStage.stageArn,
      webAclArn: this.webAcl.attrArn,
    });
    this.distribution = this.createDistribution(originVerify);
    this.baseUrl = props.baseUrl ?? `http://${this.distribution.distributionDomainName}`;
  }

  /** Access logs of the bucket and the distribution (CloudFront standard logs need object-writer ACLs). */
  private createLogBucket(): s3.Bucket {
    return new s3.Bucket(this, 'AccessLogs', {
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      objectOwnership: s3.ObjectOwnership.OBJECT_WRITER,
      lifecycleRules: [{ expiration: Duration.days(365) }],
      removalPolicy: RemovalPolicy.RETAIN,
    });
  }

  /** The published objects: CRLs and CA certificates, versioned. */
  private createObjectBucket(): s3.Bucket {
    return new s3.Bucket(this, 'Objects', {
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      versioned: true,
      // Superseded CRLs stay a while (evidence of what was published), then go.
      lifecycleRules: [{ noncurrentVersionExpiration: Duration.days(90) }],
      serverAccessLogsBucket: this.logBucket,
      serverAccessLogsPrefix: 'objects/',
      removalPolicy: RemovalPolicy.RETAIN,
    });
  }

  /** The regional API of the OCSP responder and the TSA: public, behind the distribution. */
  private createApi(ocspHandler: lambda.IFunction, tsaHandler: lambda.IFunction): apigw.RestApi {
    const api = new apigw.RestApi(this, 'OcspApi', {
      description: 'OCSP responder of the signing pipeline CA (public, RFC 6960)',
      endpointTypes: [apigw.EndpointType.REGIONAL],
      // OCSP requests and responses are DER: every body travels base64-encoded through the integration.
      binaryMediaTypes: ['*/*'],
      cloudWatchRole: false,
      deployOptions: {
        stageName: OCSP_STAGE,
        ...loggedStageOptions(this, 'OcspAccessLogs'),
        throttlingRateLimit: 500,
        throttlingBurstLimit: 1000,
        // Anyone may ask for time-stamps, each an HSM signature: their own, lower limit.
        methodOptions: {
          '/tsa/POST': { throttlingRateLimit: TSA_RATE_LIMIT, throttlingBurstLimit: TSA_RATE_LIMIT * 2 },
        },
      },
    });
    const integration = new apigw.LambdaIntegration(ocspHandler, {
      proxy: true,
      allowTestInvoke: false,
    });
    const validator = api.addRequestValidator('Parameters', { validateRequestParameters: true });
    for (const route of OCSP_ROUTES) {
      api.root.resourceForPath(route.resource).addMethod(route.method, integration, {
        authorizationType: apigw.AuthorizationType.NONE,
        requestValidator: validator,
        requestParameters: route.resource.includes('{request+}')
          ? { 'method.request.path.request': true }
          : undefined,
      });
    }

    const tsaIntegration = new apigw.LambdaIntegration(tsaHandler, {
      proxy: true,
      allowTestInvoke: false,
    });
    for (const route of TSA_ROUTES) {
      api.root.resourceForPath(route.resource).addMethod(route.method, tsaIntegration, {
        authorizationType: apigw.AuthorizationType.NONE,
        requestValidator: validator,
      });
    }
    return api;
  }

  /** The distribution: the bucket by default, OCSP and the TSA from the API with the viewer's address. */
  private createDistribution(originVerify: string): cloudfront.Distribution {
    const viewerIp = new cloudfront.Function(this, 'ViewerIp', {
      comment: `Sets ${VIEWER_IP_HEADER} to the viewer's address (per-source rate limits at the OCSP API)`,
      code: cloudfront.FunctionCode.fromInline(VIEWER_IP_FUNCTION),
      runtime: cloudfront.FunctionRuntime.JS_2_0,
    });
    const apiOrigin = new origins.RestApiOrigin(this.ocspApi, {
      customHeaders: { [ORIGIN_VERIFY_HEADER]: originVerify },
    });
    // OCSP and the TSA: every method, the viewer's address set, the host header the API's own.
    const apiBehavior = (cachePolicy: cloudfront.ICachePolicy): cloudfront.BehaviorOptions => ({
      origin: apiOrigin,
      functionAssociations: [{ function: viewerIp, eventType: cloudfront.FunctionEventType.VIEWER_REQUEST }],
      viewerProtocolPolicy: cloudfront.ViewerProtocolPolicy.ALLOW_ALL,
      allowedMethods: cloudfront.AllowedMethods.ALLOW_ALL,
      cachePolicy,
      originRequestPolicy: cloudfront.OriginRequestPolicy.ALL_VIEWER_EXCEPT_HOST_HEADER,
    });
    return new cloudfront.Distribution(this, 'Distribution', {
      comment: 'Signing pipeline PKI: CRLs, CA certificates, OCSP, TSA',
      webAclId: this.edgeWebAclArn,
      defaultBehavior: {
        origin: origins.S3BucketOrigin.withOriginAccessControl(this.bucket),
        viewerProtocolPolicy: cloudfront.ViewerProtocolPolicy.ALLOW_ALL,
        allowedMethods: cloudfront.AllowedMethods.ALLOW_GET_HEAD,
        // The crl function sets Cache-Control (minutes for CRLs, a day for certificates).
        cachePolicy: cloudfront.CachePolicy.USE_ORIGIN_CACHE_CONTROL_HEADERS,
      },
      additionalBehaviors: {
        '/ocsp*': apiBehavior(cloudfront.CachePolicy.USE_ORIGIN_CACHE_CONTROL_HEADERS),
        // Every time-stamp is new: nothing is cached.
        '/tsa': apiBehavior(cloudfront.CachePolicy.CACHING_DISABLED),
      },
      enableLogging: true,
      logBucket: this.logBucket,
      logFilePrefix: 'cloudfront/',
    });
  }

  /**
   * A regional web ACL: (0) refuse what did not come through the distribution; (1) every request, and
   * (2) time-stamps, per viewer address and minute (PKI_SOURCE_LIMITS), answered 429 past the limit.
   */
  private rateLimits(originVerify: string): wafv2.CfnWebACL {
    const visibility = (metricName: string): wafv2.CfnWebACL.VisibilityConfigProperty => ({
      cloudWatchMetricsEnabled: true,
      metricName,
      sampledRequestsEnabled: true,
    });
    const perViewer = (limit: number, scopeDownStatement?: wafv2.CfnWebACL.StatementProperty) => ({
      rateBasedStatement: {
        limit,
        evaluationWindowSec: 60,
        aggregateKeyType: 'FORWARDED_IP',
        forwardedIpConfig: { headerName: VIEWER_IP_HEADER, fallbackBehavior: 'MATCH' },
        ...(scopeDownStatement ? { scopeDownStatement } : {}),
      },
    });
    const tooMany = { block: { customResponse: { responseCode: 429 } } };
    return new wafv2.CfnWebACL(this, 'RateLimits', {
      scope: 'REGIONAL',
      description:
        'Public PKI endpoint, OCSP and TSA: through the distribution only, rate-limited per source',
      defaultAction: { allow: {} },
      visibilityConfig: visibility('PkiRateLimits'),
      rules: [
        {
          name: 'OnlyThroughTheDistribution',
          priority: 0,
          action: { block: {} },
          statement: {
            notStatement: {
              statement: {
                byteMatchStatement: {
                  fieldToMatch: { singleHeader: { Name: ORIGIN_VERIFY_HEADER } },
                  positionalConstraint: 'EXACTLY',
                  searchString: originVerify,
                  textTransformations: [{ priority: 0, type: 'NONE' }],
                },
              },
            },
          },
          visibilityConfig: visibility('PkiNotThroughTheDistribution'),
        },
        {
          name: 'PerSource',
          priority: 1,
          action: tooMany,
          statement: perViewer(PKI_SOURCE_LIMITS.requestsPerMinute),
          visibilityConfig: visibility('PkiPerSource'),
        },
        {
          name: 'TimeStampsPerSource',
          priority: 2,
          action: tooMany,
          statement: perViewer(PKI_SOURCE_LIMITS.timeStampsPerMinute, {
            byteMatchStatement: {
              fieldToMatch: { uriPath: {} },
              positionalConstraint: 'ENDS_WITH',
              searchString: '/tsa',
              textTransformations: [{ priority: 0, type: 'NONE' }],
            },
          }),
          visibilityConfig: visibility('PkiTimeStampsPerSource'),
        },
      ],
    });
  }
}
