"""Checks that deploy/kubernetes holds together (scripts/packaging/kubernetes.sh).

    kubernetes_layout.py DIR AGENT_YAML_OUT

kustomization.yaml lists files that exist and every manifest but the
example Secret and the optional Job; the Deployments run the image it
names; the agent container reads its config from where the ConfigMap is
mounted. Writes the ConfigMap's agent.yaml to AGENT_YAML_OUT.
"""

import pathlib
import sys

import yaml


def documents(path):
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def fail(message):
    sys.exit(f"FAILED: {message}")


def main():
    folder, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    kustomization = yaml.safe_load((folder / "kustomization.yaml").read_text())
    listed = kustomization["resources"]
    for name in listed:
        if not (folder / name).is_file():
            fail(f"kustomization.yaml lists {name}, which does not exist")
    manifests = {p.name for p in folder.glob("*.yaml")} - {"kustomization.yaml"}
    unlisted = manifests - set(listed) - {"secret.example.yaml", "migrate-job.yaml"}
    if unlisted:
        fail(f"kustomization.yaml does not list {sorted(unlisted)}")
    image = kustomization["images"][0]["name"]

    by_kind = {}
    for name in manifests:
        for doc in documents(folder / name):
            by_kind.setdefault(doc["kind"], []).append(doc)
    for deployment in by_kind["Deployment"]:
        for container in deployment["spec"]["template"]["spec"]["containers"]:
            if container["image"].split(":")[0] != image:
                fail(f"{deployment['metadata']['name']} runs {container['image']}, not the kustomized {image}")

    config_maps = {c["metadata"]["name"]: c for c in by_kind["ConfigMap"]}
    agent = next(d for d in by_kind["Deployment"] if d["metadata"]["name"] == "agent-stop-and-go")
    pod = agent["spec"]["template"]["spec"]
    container = pod["containers"][0]
    config_path = container["command"][container["command"].index("--config") + 1]
    mounts = {m["name"]: m["mountPath"] for m in container.get("volumeMounts", [])}
    for volume in pod["volumes"]:
        source = volume.get("configMap")
        if source and config_path.startswith(mounts.get(volume["name"], "//") + "/"):
            key = config_path.rsplit("/", 1)[1]
            data = config_maps[source["name"]]["data"]
            if key not in data:
                fail(f"the agent reads {config_path}, but ConfigMap {source['name']} has no key {key}")
            out.write_text(data[key])
            print(f"  ok: kustomization, images and mounts agree; the agent reads {config_path} from ConfigMap {source['name']}")
            return
    fail(f"no ConfigMap volume is mounted where the agent reads {config_path}")


if __name__ == "__main__":
    main()
