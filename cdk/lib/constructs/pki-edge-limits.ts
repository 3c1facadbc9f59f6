import { PKI_SOURCE_LIMITS } from '@pipeline/resources';
import { aws_wafv2 as wafv2 } from 'aws-cdk-lib';
import { Construct } from 'constructs';

/**
 * The per-source limit in front of everything the PKI distribution serves, the cached CRLs and CA
 * certificates included: a CloudFront-scope web ACL (AWS creates those in us-east-1 only, so it lives in
 * a stack of its own, `cdk/bin/pki-edge.ts`) that answers 429 past PKI_SOURCE_LIMITS.requestsPerMinute
 * per viewer address. OCSP and the TSA pass their regional API's web ACL as well.
 */
export class PkiEdgeLimits extends Construct {
  public readonly webAcl: wafv2.CfnWebACL;

  public constructor(scope: Construct, id: string) {
    super(scope, id);
    const visibility = (metricName: string): wafv2.CfnWebACL.VisibilityConfigProperty => ({
      cloudWatchMetricsEnabled: true,
      metricName,
      sampledRequestsEnabled: true,
    });
    this.webAcl = new wafv2.CfnWebACL(this, 'WebAcl', {
      scope: 'CLOUDFRONT',
      description: 'Public PKI distribution - CRLs, CA certificates, OCSP, TSA - rate-limited per source',
      defaultAction: { allow: {} },
      visibilityConfig: visibility('PkiEdge'),
      rules: [
        {
          name: 'PerSource',
          priority: 0,
          action: { block: { customResponse: { responseCode: 429 } } },
          statement: {
            rateBasedStatement: {
              limit: PKI_SOURCE_LIMITS.requestsPerMinute,
              evaluationWindowSec: 60,
              // At CloudFront scope the source address is the viewer's own.
              aggregateKeyType: 'IP',
            },
          },
          visibilityConfig: visibility('PkiEdgePerSource'),
        },
      ],
    });
  }
}
