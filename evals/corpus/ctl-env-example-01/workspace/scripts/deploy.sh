#!/usr/bin/env bash
# Build the image, push it and roll the service.
source "$(dirname "$0")/lib.sh"

IMAGE=${IMAGE:-registry.internal/app}
TAG=${TAG:-$(git rev-parse --short HEAD)}

require docker git
log "building $IMAGE:$TAG"
docker build -t "$IMAGE:$TAG" .
docker push "$IMAGE:$TAG"
log "rolling app to $TAG"
docker service update --image "$IMAGE:$TAG" app_web
