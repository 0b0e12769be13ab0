# Part 2 of scripts/test-docker.sh: deploy/kubernetes validated, not run.
#   - every manifest against the Kubernetes API's OpenAPI schemas, strict
#     (unknown fields are errors): kubernetes-validate from PyPI, which
#     ships the schemas (no cluster, no download at run time), in a venv
#     under target/;
#   - kustomization.yaml names files that exist, and the image the
#     Deployments run;
#   - the agent.yaml inside the ConfigMap passes `agent check`, and the
#     Deployment reads it where the ConfigMap is mounted.

KUBERNETES_VALIDATE_VERSION=1.37.0

test_kubernetes_manifests() {
  step "Kubernetes manifests (deploy/kubernetes; kubernetes-validate $KUBERNETES_VALIDATE_VERSION, strict)"
  local venv=$ROOT/target/kubernetes-validate
  if [ "$("$venv/bin/kubernetes-validate" --version 2>/dev/null || true)" != "$KUBERNETES_VALIDATE_VERSION" ]; then
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "kubernetes-validate==$KUBERNETES_VALIDATE_VERSION"
  fi
  local manifests=()
  for file in deploy/kubernetes/*.yaml; do
    [ "$(basename "$file")" = kustomization.yaml ] || manifests+=("$file")
  done
  "$venv/bin/kubernetes-validate" --strict --quiet --no-warn "${manifests[@]}" \
    || fail "a manifest in deploy/kubernetes does not match the Kubernetes schemas"
  ok "${#manifests[@]} manifests match the Kubernetes $KUBERNETES_VALIDATE_VERSION schemas"

  local config=$WORK/k8s-agent.yaml
  "$venv/bin/python" scripts/packaging/kubernetes_layout.py deploy/kubernetes "$config" \
    || fail "deploy/kubernetes is not consistent (see above)"
  DATABASE_URL=postgres://check@localhost/check "$PACKAGE_DIR/bin/agent" check --config "$config" \
    || fail "the ConfigMap's agent.yaml does not pass 'agent check'"
  ok "the ConfigMap's agent.yaml passes 'agent check'"
}
