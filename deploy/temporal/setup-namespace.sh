#!/bin/sh
# One-shot: Attune's namespace and the custom search attributes its workflows set (the dev server
# gets the same list from src/temporal/searchAttributes.ts; test/deploy/compose.test.ts keeps them equal).
set -eu
address=${TEMPORAL_ADDRESS:-temporal:7233}
namespace=${ATTUNE_NAMESPACE:-default}
retention=${ATTUNE_NAMESPACE_RETENTION:-168h}

tries=0
until temporal operator cluster health --address "$address" >/dev/null 2>&1; do
  tries=$((tries + 1))
  if [ "$tries" -ge 60 ]; then
    echo "Temporal at $address is not healthy after 120 s" >&2
    exit 1
  fi
  sleep 2
done

temporal operator namespace describe --address "$address" --namespace "$namespace" >/dev/null 2>&1 ||
  temporal operator namespace create --address "$address" --namespace "$namespace" --retention "$retention"

existing=$(temporal operator search-attribute list --address "$address" --namespace "$namespace")
for attribute in \
  AttuneKind=Keyword \
  AttuneRunName=Keyword \
  AttuneStep=Int \
  AttunePhase=Keyword \
  AttuneMeanReward=Double \
  AttuneScenarioId=Keyword \
  AttuneOutcome=Keyword \
  AttuneFinalEmotion=Double; do
  name=${attribute%%=*}
  type=${attribute#*=}
  if printf '%s\n' "$existing" | grep -qw "$name"; then
    echo "search attribute $name exists"
  else
    temporal operator search-attribute create --address "$address" --namespace "$namespace" --name "$name" --type "$type"
  fi
done
echo "namespace $namespace ready"
