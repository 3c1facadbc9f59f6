#!/usr/bin/env bash
# What the stack cannot create (CloudFormation has no CloudHSM cluster resource): the cluster in the
# HSMs' VPC, its initialization and its second HSM, with the AWS CLI. docs/operations.md walks the order;
# each step is idempotent on the cluster's state and prints the next one. Written from AWS's CloudHSM
# documentation (create-cluster, create-hsm, initialize-cluster, describe-clusters); not run from here.
#
#   cluster.sh create   <subnet-id> <subnet-id> [...]   cluster (hsm2m.medium, FIPS) + first HSM; writes <id>_ClusterCsr.csr
#   cluster.sh sign     <cluster-id> <issuing-ca.crt> <issuing-ca.key>   openssl: signs the CSR (the operator's CA, offline is better)
#   cluster.sh initialize <cluster-id> <cluster.crt> <customerCA.crt>     initialize-cluster, waits for INITIALIZED
#   cluster.sh add-hsm  <cluster-id> <availability-zone>                   second HSM in another AZ, waits for ACTIVE
#   cluster.sh context  <cluster-id>                                        prints the -c values of the deploy
set -euo pipefail

die() { printf '[cluster] ERROR: %s\n' "$*" >&2; exit 1; }
log() { printf '[cluster] %s\n' "$*" >&2; }
command -v aws >/dev/null || die "the AWS CLI v2 is required"

state() { aws cloudhsmv2 describe-clusters --filters "clusterIds=$1" --query 'Clusters[0].State' --output text; }
wait_state() { # cluster-id wanted-state (polls every 30 s, at most an hour)
  local i
  for i in $(seq 1 120); do
    [ "$(state "$1")" = "$2" ] && return 0
    sleep 30
  done
  die "$1 is $(state "$1") after an hour, not $2"
}

case "${1:-}" in
  create)
    shift
    [ "$#" -ge 2 ] || die "create needs the HSMs' subnets in two availability zones"
    id="$(aws cloudhsmv2 create-cluster --hsm-type hsm2m.medium --mode FIPS --subnet-ids "$@" \
      --query 'Cluster.ClusterId' --output text)"
    log "created $id; waiting for UNINITIALIZED"
    wait_state "$id" UNINITIALIZED
    az="$(aws ec2 describe-subnets --subnet-ids "$1" --query 'Subnets[0].AvailabilityZone' --output text)"
    aws cloudhsmv2 create-hsm --cluster-id "$id" --availability-zone "$az" >/dev/null
    log "first HSM in $az; waiting for its CSR"
    for _ in $(seq 1 120); do
      csr="$(aws cloudhsmv2 describe-clusters --filters "clusterIds=$id" \
        --query 'Clusters[0].Certificates.ClusterCsr' --output text)"
      [ "$csr" != "None" ] && [ -n "$csr" ] && break
      sleep 30
    done
    printf '%s\n' "$csr" >"${id}_ClusterCsr.csr"
    log "wrote ${id}_ClusterCsr.csr; next: cluster.sh sign $id <issuing-ca.crt> <issuing-ca.key>"
    echo "$id"
    ;;
  sign)
    [ "$#" -eq 4 ] || die "sign <cluster-id> <issuing-ca.crt> <issuing-ca.key>"
    openssl x509 -req -days 3652 -in "${2}_ClusterCsr.csr" -CA "$3" -CAkey "$4" -CAcreateserial \
      -out "${2}_CustomerHsmCertificate.crt"
    log "wrote ${2}_CustomerHsmCertificate.crt; customerCA.crt is $3 (the trust anchor); next: cluster.sh initialize"
    ;;
  initialize)
    [ "$#" -eq 4 ] || die "initialize <cluster-id> <cluster.crt> <customerCA.crt>"
    aws cloudhsmv2 initialize-cluster --cluster-id "$2" --signed-cert "file://$3" --trust-anchor "file://$4" >/dev/null
    log "waiting for INITIALIZED"
    wait_state "$2" INITIALIZED
    log "initialized; next: on the admin host, cloudhsm-cli cluster activate (docs/operations.md), then cluster.sh add-hsm"
    ;;
  add-hsm)
    [ "$#" -eq 3 ] || die "add-hsm <cluster-id> <availability-zone>"
    aws cloudhsmv2 create-hsm --cluster-id "$2" --availability-zone "$3" >/dev/null
    for _ in $(seq 1 120); do
      active="$(aws cloudhsmv2 describe-clusters --filters "clusterIds=$2" \
        --query "length(Clusters[0].Hsms[?State=='ACTIVE'])" --output text)"
      [ "$active" -ge 2 ] && { log "$active HSMs active"; exit 0; }
      sleep 30
    done
    die "the second HSM is not ACTIVE after an hour"
    ;;
  context)
    [ "$#" -eq 2 ] || die "context <cluster-id>"
    sg="$(aws cloudhsmv2 describe-clusters --filters "clusterIds=$2" --query 'Clusters[0].SecurityGroup' --output text)"
    vpc="$(aws cloudhsmv2 describe-clusters --filters "clusterIds=$2" --query 'Clusters[0].VpcId' --output text)"
    subnets="$(aws cloudhsmv2 describe-clusters --filters "clusterIds=$2" \
      --query 'Clusters[0].SubnetMapping.* | join(`,`, @)' --output text)"
    azs="$(aws ec2 describe-subnets --subnet-ids ${subnets//,/ } --query 'Subnets[].AvailabilityZone' --output text | tr '\t' ',')"
    cidr="$(aws ec2 describe-vpcs --vpc-ids "$vpc" --query 'Vpcs[0].CidrBlock' --output text)"
    rtbs=""
    for s in ${subnets//,/ }; do
      rt="$(aws ec2 describe-route-tables --filters "Name=association.subnet-id,Values=$s" \
        --query 'RouteTables[0].RouteTableId' --output text)"
      [ "$rt" != "None" ] || rt="$(aws ec2 describe-route-tables --filters "Name=vpc-id,Values=$vpc" \
        "Name=association.main,Values=true" --query 'RouteTables[0].RouteTableId' --output text)"
      rtbs="${rtbs:+$rtbs,}$rt"
    done
    quota="$(aws lambda get-account-settings --query 'AccountLimit.ConcurrentExecutions' --output text)"
    printf -- '-c hsmClusterId=%s -c hsmSecurityGroupId=%s -c vpcId=%s -c vpcCidr=%s -c vpcAvailabilityZones=%s -c vpcIsolatedSubnetIds=%s -c vpcIsolatedRouteTableIds=%s -c lambdaConcurrencyQuota=%s\n' \
      "$2" "$sg" "$vpc" "$cidr" "$azs" "$subnets" "$rtbs" "$quota"
    ;;
  *) sed -n '2,13p' "$0" >&2; exit 2 ;;
esac
