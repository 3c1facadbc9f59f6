import { RemovalPolicy } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import type { ExistingVpc } from '../settings';

export interface NetworkProps {
  /** The HSMs' VPC; without it (placeholder synths only) the stack creates an isolated VPC to synth against. */
  readonly existing?: ExistingVpc;
}

/**
 * Private isolated subnets only, no NAT: the functions reach AWS services through VPC endpoints and the
 * HSMs directly. Nothing in this network can reach the internet.
 */
export class Network extends Construct {
  public readonly vpc: ec2.IVpc;
  public readonly functionSubnets: ec2.SubnetSelection = { subnetType: ec2.SubnetType.PRIVATE_ISOLATED };

  public constructor(scope: Construct, id: string, props: NetworkProps) {
    super(scope, id);
    this.vpc = props.existing
      ? ec2.Vpc.fromVpcAttributes(this, 'Vpc', {
          vpcId: props.existing.vpcId,
          vpcCidrBlock: props.existing.cidr,
          availabilityZones: props.existing.availabilityZones,
          isolatedSubnetIds: props.existing.isolatedSubnetIds,
          isolatedSubnetRouteTableIds: props.existing.isolatedRouteTableIds,
        })
      : this.createVpc();
    if (!props.existing || props.existing.createEndpoints) this.addEndpoints();
  }

  private createVpc(): ec2.IVpc {
    const vpc = new ec2.Vpc(this, 'Vpc', {
      maxAzs: 2,
      natGateways: 0,
      subnetConfiguration: [{ name: 'hsm', subnetType: ec2.SubnetType.PRIVATE_ISOLATED, cidrMask: 24 }],
    });
    const flowLogs = new logs.LogGroup(this, 'FlowLogs', {
      retention: logs.RetentionDays.ONE_YEAR,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    vpc.addFlowLog('FlowLog', { destination: ec2.FlowLogDestination.toCloudWatchLogs(flowLogs) });
    return vpc;
  }

  private addEndpoints(): void {
    // Gateway endpoints: free; DynamoDB is on the hot path of every request, S3 holds the published
    // CRLs (crl, ocsp, signer) and the audit anchors (audit-checkpoint).
    this.vpc.addGatewayEndpoint('DynamoDb', {
      service: ec2.GatewayVpcEndpointAwsService.DYNAMODB,
      subnets: [this.functionSubnets],
    });
    this.vpc.addGatewayEndpoint('S3', {
      service: ec2.GatewayVpcEndpointAwsService.S3,
      subnets: [this.functionSubnets],
    });
    const interfaces: [string, ec2.InterfaceVpcEndpointAwsService][] = [
      ['Sqs', ec2.InterfaceVpcEndpointAwsService.SQS],
      ['Lambda', ec2.InterfaceVpcEndpointAwsService.LAMBDA],
      ['SecretsManager', ec2.InterfaceVpcEndpointAwsService.SECRETS_MANAGER],
      ['Ssm', ec2.InterfaceVpcEndpointAwsService.SSM],
      ['Logs', ec2.InterfaceVpcEndpointAwsService.CLOUDWATCH_LOGS],
      ['Monitoring', ec2.InterfaceVpcEndpointAwsService.CLOUDWATCH_MONITORING],
      // Active tracing: the functions' segments reach X-Ray without a route to the internet.
      ['XRay', ec2.InterfaceVpcEndpointAwsService.XRAY],
    ];
    for (const [id, service] of interfaces) {
      // `open: true` admits HTTPS from the VPC's CIDR only (the endpoint's own security group).
      this.vpc.addInterfaceEndpoint(id, {
        service,
        subnets: this.functionSubnets,
        privateDnsEnabled: true,
        open: true,
      });
    }
  }
}
