"""The problem pool: P = <task, context, solution> (AIOpsLab §2.1).

Ids follow AIOpsLab's registry (microsoft/AIOpsLab aiopslab/orchestrator/problems/registry.py) for
the problems whose application the twin has; the context's fault is what that problem's injector
does (aiopslab/generators/fault/inject_otel.py: a flagd flag's defaultVariant set to "on", "100%"
for paymentFailure, "10sec" for imageSlowLoad), the solution what its evaluator compares with
(the problem module's `faulty_service`, or "Yes"/"No" for detection).

Beyond AIOpsLab's own problems, any catalog fault of an app is a problem of any task, with the id
`<app>-<catalog entry id>-<task>` (the catalog's ids are unique within an app, the task is one of
TASKS); localization is the entry's workload, analysis its category's system level and fault type.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

TASKS = ("detection", "localization", "analysis", "mitigation")

#: The catalog's categories in AIOpsLab's analysis vocabulary (system level, fault type; the
#: choices of aiopslab/orchestrator/tasks/analysis.py). Kubernetes-object faults sit at the
#: Virtualization level as AIOpsLab's target-port and scale-to-zero problems do.
CATEGORY_ANALYSIS: dict[str, tuple[str, str]] = {
    "code": ("Application", "Code Defect"),
    "dependency": ("Application", "Dependency Problem"),
    "infrastructure": ("Virtualization", "Operation Error"),
    "deployment": ("Virtualization", "Misconfiguration"),
    "configuration": ("Application", "Misconfiguration"),
    "database-network": ("Virtualization", "Network/Storage Issue"),
    "authentication": ("Application", "Authentication Issue"),
}


#: The Backend calls a "k8s" fault may make: each is what a kubectl command of AIOpsLab's injectors
#: amounts to (a Service's targetPort patched, a nodeSelector applied, mongod's args the chart
#: renders, a container's command, a deployment's image or rollout strategy, a rollout restart,
#: `kubectl scale`).
K8S_STEPS = ("set_service_target_port", "set_node_selector", "set_container_args", "set_container_command",
             "release", "restart", "scale")


@dataclass(frozen=True)
class Fault:
    """How a problem's fault is put in place at t = 0 and what undoing it means."""

    kind: str  # "flag": set a flagd flag's default variant; "catalog": inject a catalog entry;
    #            "chaos": start twin chaos faults (AIOpsLab's injector steps as the twin does them);
    #            "k8s": change Kubernetes objects as AIOpsLab's kubectl/helm steps do (K8S_STEPS)
    name: str  # the flag, the catalog entry id, or the AIOpsLab fault type
    value: str = ""  # the flag's faulty variant
    healthy: str = ""  # the flag's variant when the fault is gone
    #: kind "chaos": (chaos kind, target, params) started in order at t = 0; kind "k8s":
    #: (Backend method in K8S_STEPS, target, params) called in order at t = 0
    steps: tuple[Any, ...] = ()
    #: kind "chaos"/"k8s": the probe that passes once the fault's effect is gone (judged with pods healthy)
    check: dict[str, Any] | None = None
    #: kind "chaos"/"k8s": the kubectl commands that undo it (`{ns}`: the namespace), what the oracle runs
    repairs: tuple[str, ...] = ()
    #: kind "k8s": (deployment, program) whose every container's command must name the program
    #: again for a mitigation (AIOpsLab's WrongBinUsageMitigation reads the deployment's command)
    command: tuple[str, str] | None = None


@dataclass(frozen=True)
class Problem:
    pid: str
    app: str
    task: str
    fault: Fault | None  # None: a no-operation problem (nothing injected)
    #: The workloads a localization must name (AIOpsLab's faulty_service).
    faulty: tuple[str, ...] = ()
    #: Analysis answer: (system level, fault type) in AIOpsLab's words.
    analysis: tuple[str, str] | None = None
    #: Why the twin cannot run this problem faithfully (the item is skipped with this reason).
    unsupported: str = ""
    source: str = "aiopslab"
    tags: tuple[str, ...] = field(default=())

    @property
    def expects_anomaly(self) -> bool:
        return self.fault is not None


def _flag_problems() -> list[Problem]:
    # (AIOpsLab problem stem, flag, faulty variant, faulty service, tasks)
    # from each aiopslab/orchestrator/problems/<stem>/<stem>.py and the registry's ids
    rows = (
        ("ad_service_failure", "adFailure", "on", "ad", ("detection", "localization")),
        ("ad_service_high_cpu", "adHighCpu", "on", "ad", ("detection", "localization")),
        ("ad_service_manual_gc", "adManualGc", "on", "ad", ("detection", "localization")),
        ("cart_service_failure", "cartFailure", "on", "cart", ("detection", "localization")),
        ("image_slow_load", "imageSlowLoad", "10sec", "frontend", ("detection", "localization")),
        ("kafka_queue_problems", "kafkaQueueProblems", "on", "kafka",
         ("detection", "localization", "mitigation")),
        ("loadgenerator_flood_homepage", "loadGeneratorFloodHomepage", "on", "frontend",
         ("detection", "localization")),
        ("payment_service_failure", "paymentFailure", "100%", "payment", ("detection", "localization")),
        ("payment_service_unreachable", "paymentUnreachable", "on", "checkout", ("detection", "localization")),
        ("product_catalog_service_failure", "productCatalogFailure", "on", "product-catalog",
         ("detection", "localization")),
        ("recommendation_service_cache_failure", "recommendationCacheFailure", "on", "recommendation",
         ("detection", "localization")),
    )
    unsupported = {
        "imageSlowLoad": "the twin does not model imageSlowLoad's delay (docs/fidelity.md, Astronomy Shop)",
    }
    out = []
    for stem, flag, variant, service, tasks in rows:
        for task in tasks:
            out.append(Problem(
                pid=f"astronomy_shop_{stem}-{task}-1", app="astronomy", task=task,
                fault=Fault("flag", flag, variant, "off"), faulty=(service,),
                unsupported=unsupported.get(flag, ""),
            ))
    out.append(Problem(pid="noop_detection_astronomy_shop-1", app="astronomy", task="detection", fault=None))
    return out


HOTEL = "hotelreservation"
#: A search through the frontend: geo and rate are on its path (services/frontend/server.go
#: searchHandler -> search.Nearby -> geo.Nearby, rate.GetRates).
SEARCH_PROBE = {"kind": "request", "route": "/hotels", "max_seconds": 2.5}
#: The mongo shell AIOpsLab's fault scripts run in the MongoDB pod (kubectl exec).
MONGO_SHELL = "kubectl exec deploy/{db} -n {{ns}} -- mongo admin -u {user} -p {user} --authenticationDatabase admin --eval "


def _mongo_problems() -> list[Problem]:
    """revoke_auth and storage_user_unregistered on mongodb-geo (-1) and mongodb-rate (-2)
    (aiopslab/orchestrator/problems/revoke_auth, storage_user_unregistered; the injector
    aiopslab/generators/fault/inject_app.py runs the fault script in the MongoDB pod, then deletes
    the service's pods so they reconnect; the scripts aiopslab/generators/fault/script/
    revoke-admin-<db>-mongo.sh: revokeRolesFromUser('admin', [readWrite on <db>-db]) as admin;
    remove-admin-mongo.sh: dropUser('admin') as root; the -mitigate- scripts grant the role back,
    or re-create admin with userAdminAnyDatabase and grant it, as root)."""
    out = []
    for n, service in ((1, "geo"), (2, "rate")):
        db, database = f"mongodb-{service}", f"{service}-db"
        grant = f"\"db.grantRolesToUser('admin', [{{role: 'readWrite', db: '{database}'}}]);\""
        create = ("\"db.createUser({user: 'admin', pwd: 'admin', roles: [{role: 'userAdminAnyDatabase', "
                  "db: 'admin'}]});\"")
        restart = f"kubectl rollout restart deployment/{service} -n {{ns}}"
        faults = {
            "revoke_auth": (Fault(
                "chaos", "revoke_auth",
                steps=(("mongo_revoke_roles", db, {"user": "admin", "db": "admin",
                                                   "roles": [{"role": "readWrite", "db": database}]}),
                       ("pod_kill", service, {})),
                check=SEARCH_PROBE,
                repairs=(MONGO_SHELL.format(db=db, user="admin") + grant, restart)),
                ("Application", "Authentication Issue")),
            "user_unregistered": (Fault(
                "chaos", "storage_user_unregistered",
                steps=(("mongo_drop_user", db, {"user": "admin", "db": "admin"}), ("pod_kill", service, {})),
                check=SEARCH_PROBE,
                repairs=(MONGO_SHELL.format(db=db, user="root") + create,
                         MONGO_SHELL.format(db=db, user="root") + grant, restart)),
                ("Application", "Network/Storage Issue")),
        }
        for stem, (fault, analysis) in faults.items():
            for task in TASKS:
                # either the database or its service is a right localization (the problem modules
                # accept faulty_service.removeprefix("mongodb-"))
                out.append(Problem(pid=f"{stem}_mongodb-{task}-{n}", app=HOTEL, task=task, fault=fault,
                                   faulty=(db, service), analysis=analysis))
    return out


def _hotel_problems() -> list[Problem]:
    """The rest of AIOpsLab's HotelReservation problems, in the registry's order."""
    out = []
    # misconfig_app_hotel_res.py through inject_app.py inject_misconfig_app: geo's container image
    # replaced by yinfangchen/geo:app3 (an update of the deployment, no change-cause); recovery sets
    # the image back, which `rollout undo` or `set image` to the previous one does
    misconfig = Fault("k8s", "misconfig_app",
                      steps=(("release", "geo", {"image": "yinfangchen/geo:app3", "change_cause": ""}),),
                      check=SEARCH_PROBE,
                      repairs=("kubectl set image deployment/geo hotel-reserv-geo=localhost:5001/hotelreservation/geo:latest -n {ns}",))
    for task in TASKS:
        out.append(Problem(pid=f"misconfig_app_hotel_res-{task}-1", app=HOTEL, task=task, fault=misconfig,
                           faulty=("geo",), analysis=("Application", "Misconfiguration")))
    # container_kill.py: inject_container_kill("geo", "hotel-reserv-geo"), PodChaos container-kill
    # mode one (registry ids without "-1")
    kill = Fault("chaos", "container_kill", steps=(("container_kill", "geo", {"container": "hotel-reserv-geo"}),))
    for task in ("detection", "localization"):
        out.append(Problem(pid=f"container_kill-{task}", app=HOTEL, task=task, fault=kill, faulty=("geo",)))
    # aiopslab/generators/fault/inject_symp.py on one pod of `user`: PodChaos pod-failure for 100 s
    # (pod_failure.py, pod_kill.py: duration="100s"; inject_pod_kill uses the pod-failure action
    # too), NetworkChaos for 200 s, loss 99 % (correlation 100), delay 10 s latency
    failure = (("pod_failure", "user", {"count": 1, "duration": 100.0}),)
    symptoms = (
        ("pod_failure_hotel_res", Fault("chaos", "pod_failure", steps=failure)),
        ("pod_kill_hotel_res", Fault("chaos", "pod_kill", steps=failure)),
        ("network_loss_hotel_res", Fault("chaos", "network_loss", steps=(("network_loss", "user", {"loss": 0.99}),))),
        ("network_delay_hotel_res", Fault("chaos", "network_delay",
                                          steps=(("network_delay", "user", {"delay_ms": 10_000.0}),))),
    )
    for stem, fault in symptoms:
        for task in ("detection", "localization"):
            out.append(Problem(pid=f"{stem}-{task}-1", app=HOTEL, task=task, fault=fault, faulty=("user",)))
    out.append(Problem(pid="noop_detection_hotel_reservation-1", app=HOTEL, task="detection", fault=None))
    # redeploy_without_pv.py: inject_virtual.py inject_redeploy_without_pv deletes the namespace and
    # applies the app again while the PersistentVolumes (cluster objects, reclaim policy Retain
    # by default for a manifest's PV) stay Released to the deleted claims
    for task in ("detection", "analysis", "mitigation"):
        out.append(Problem(pid=f"redeploy_without_PV-{task}-1", app=HOTEL, task=task,
                           fault=Fault("k8s", "redeploy_without_pv"), analysis=("Virtualization", "Operation Error"),
                           unsupported="the twin has no PersistentVolumes, claims or namespace deletion "
                                       "(docs/fidelity.md, HotelReservation)"))
    # wrong_bin_usage.py: inject_virtual.py inject_wrong_bin_usage replaces profile's `command:
    # [profile]` by `[geo]`, deleting the deployment and applying it again (the twin cannot delete
    # one: the Recreate strategy, then the command, leaves the same state, every old pod gone
    # before the new one starts). geo's binary reads GeoPort 8083 from the image's config.json
    # (cmd/geo/main.go), so the profile Service's port 8081 refuses the frontend; Application /
    # Network/Storage Issue; mitigation: the command names `profile` again and every pod is ready
    wrong_bin = Fault("k8s", "wrong_bin_usage",
                      steps=(("release", "profile", {"strategy": {"type": "Recreate"}, "change_cause": ""}),
                             ("set_container_command", "profile", {"command": ["geo"]})),
                      check=SEARCH_PROBE, command=("profile", "profile"),
                      repairs=("kubectl patch deployment profile -n {ns} --type=json -p '[{\"op\": \"replace\", "
                               "\"path\": \"/spec/template/spec/containers/0/command\", \"value\": [\"profile\"]}]'",))
    for task in TASKS:
        out.append(Problem(pid=f"wrong_bin_usage-{task}-1", app=HOTEL, task=task, fault=wrong_bin,
                           faulty=("profile",), analysis=("Application", "Network/Storage Issue")))
    return out


SOCIAL = "socialnetwork"
#: A post composed through nginx-thrift: user-service is on its path (ComposePostHandler.h
#: _ComposeCreaterHelper -> UserService ComposeCreatorWithUserId).
COMPOSE_PROBE = {"kind": "request", "route": "/wrk2-api/post/compose", "max_seconds": 2.5}


#: url-shorten-mongodb's args as the chart renders them, and with the TLS values auth_miss_mongodb sets
#: (socialNetwork/helm-chart/socialnetwork/charts/url-shorten-mongodb; inject_app.py
#: inject_auth_miss_mongodb: tls.mode requireTLS, certificateKeyFile /etc/tls/tls.pem, CAFile /etc/tls/ca.crt)
URL_MONGO_ARGS = ["--config", "/social-network-microservices/config/mongod.conf"]
URL_MONGO_TLS_ARGS = [*URL_MONGO_ARGS, "--tlsMode", "requireTLS", "--tlsCertificateKeyFile", "/etc/tls/tls.pem",
                      "--tlsCAFile", "/etc/tls/ca.crt"]


def _social_problems() -> list[Problem]:
    """AIOpsLab's SocialNetwork problems, in the registry's order (aiopslab/orchestrator/problems/
    registry.py; injectors in aiopslab/generators/fault/inject_virtual.py and inject_app.py)."""
    out = []
    # target_port.py: misconfig_k8s sets the Service's targetPort 9090 -> 9999; Virtualization /
    # Misconfiguration; mitigation: the targetPort back to 9090 and every pod running
    for n, service in enumerate(("user-service", "text-service", "post-storage-service"), start=1):
        fault = Fault("k8s", "misconfig_k8s",
                      steps=(("set_service_target_port", service, {"target_port": 9999}),), check=COMPOSE_PROBE,
                      repairs=(f"kubectl patch service {service} -n {{ns}} --type=json -p "
                               "'[{\"op\": \"replace\", \"path\": \"/spec/ports/0/targetPort\", \"value\": 9090}]'",))
        out += [Problem(pid=f"k8s_target_port-misconfig-{task}-{n}", app=SOCIAL, task=task, fault=fault,
                        faulty=(service,), analysis=("Virtualization", "Misconfiguration")) for task in TASKS]
    # auth_miss_mongodb.py: a helm upgrade turns url-shorten-mongodb's TLS mode to requireTLS (the
    # twin: mongod's args, as the rendered config would say it), then restarts it; plaintext
    # clients are refused; Application / Misconfiguration
    fault = Fault("k8s", "auth_miss_mongodb",
                  steps=(("set_container_args", "url-shorten-mongodb", {"args": URL_MONGO_TLS_ARGS}),),
                  check=COMPOSE_PROBE, repairs=("kubectl rollout undo deployment/url-shorten-mongodb -n {ns}",))
    out += [Problem(pid=f"auth_miss_mongodb-{task}-1", app=SOCIAL, task=task, fault=fault,
                    faulty=("url-shorten-mongodb",), analysis=("Application", "Misconfiguration")) for task in TASKS]
    # scale_pod_social_net.py: `kubectl scale deployment user-service --replicas=0`; Virtualization /
    # Operation Error; mitigation: 1 desired and available replica, every pod ready
    fault = Fault("k8s", "scale_pods_to_zero", steps=(("scale", "user-service", {"replicas": 0}),),
                  check=COMPOSE_PROBE,
                  repairs=("kubectl scale deployment user-service -n {ns} --replicas=1",))
    out += [Problem(pid=f"scale_pod_zero_social_net-{task}-1", app=SOCIAL, task=task, fault=fault,
                    faulty=("user-service",), analysis=("Virtualization", "Operation Error")) for task in TASKS]
    # assign_non_existent_node_social_net.py: user-service's deployment deleted and applied again
    # with nodeSelector kubernetes.io/hostname: extra-node (the twin cannot delete a deployment:
    # the Recreate strategy, then the selector, leaves the same nothing-serves state); its pod stays
    # Pending; Virtualization / Dependency Problem
    fault = Fault("k8s", "assign_to_non_existent_node",
                  steps=(("release", "user-service", {"strategy": {"type": "Recreate"}, "change_cause": ""}),
                         ("set_node_selector", "user-service", {"selector": {"kubernetes.io/hostname": "extra-node"}})),
                  check=COMPOSE_PROBE,
                  repairs=("kubectl patch deployment user-service -n {ns} --type=json -p "
                           "'[{\"op\": \"remove\", \"path\": \"/spec/template/spec/nodeSelector\"}]'",))
    out += [Problem(pid=f"assign_to_non_existent_node_social_net-{task}-1", app=SOCIAL, task=task, fault=fault,
                    faulty=("user-service",), analysis=("Virtualization", "Dependency Problem")) for task in TASKS]
    out.append(Problem(pid="noop_detection_social_network-1", app=SOCIAL, task="detection", fault=None))
    return out


def aiopslab_problems() -> list[Problem]:
    """AIOpsLab's problems on the applications the twin has, in the registry's order."""
    return _flag_problems() + _mongo_problems() + _hotel_problems() + _social_problems()


def catalog_problems(app: str) -> list[Problem]:
    """Every catalog entry of `app` as a problem of each task (none for an app without a catalog,
    as HotelReservation has none yet)."""
    from pytest_marathon.faults import load_catalog
    from pytest_marathon.faults.catalog import catalog_root

    if not catalog_root(app).is_dir():
        return []
    out = []
    for entry in load_catalog(app).entries:
        level, kind = CATEGORY_ANALYSIS[entry.category]
        # mitigation only where the entry has a remedy (a `none` remedy is waited out)
        for task in TASKS if entry.remedy else TASKS[:3]:
            out.append(Problem(
                pid=f"{app}-{entry.id}-{task}", app=app, task=task,
                fault=Fault("catalog", entry.id), faulty=tuple(entry.culprits),
                analysis=(level, kind), source="catalog",
            ))
    return out


def problem_pool(apps: tuple[str, ...], *, catalog: bool = False) -> list[Problem]:
    """The problems of `apps`: AIOpsLab's, then (with `catalog`) every catalog fault as a problem."""
    pool = [p for p in aiopslab_problems() if p.app in apps]
    if catalog:
        for app in apps:
            pool.extend(catalog_problems(app))
    return pool


def find_problem(pid: str, apps: tuple[str, ...]) -> Problem:
    for problem in problem_pool(apps, catalog=True):
        if problem.pid == pid:
            return problem
    known = ", ".join(p.pid for p in problem_pool(apps))
    raise ValueError(f"no problem {pid!r} for {', '.join(apps)}; AIOpsLab's: {known} "
                     "(or <app>-<catalog entry id>-<task>)")
