import NotificationHubs
import Synchronization

/// One hub's registrations and installations, with a tag index per format so that a send to a
/// tag finds its audience without scanning every device.
final class HubStore: Sendable {
    fileprivate struct State {
        var registrations: [String: Registration] = [:]
        /// Each registration's version, changed by every write: its ETag.
        var etags: [String: Int] = [:]
        var nextETag = 1
        var installations: [String: Installation] = [:]
        var targets: [Int: Target] = [:]
        var targetsByOwner: [String: [Int]] = [:]
        /// format → tag → targets.
        var index: [String: [String: Set<Int>]] = [:]
        /// format → every target of that format (for `!` and for sends without tags).
        var universe: [String: Set<Int>] = [:]
        var nextTarget = 0
    }

    private let state = Mutex(State())

    /// What a send reached: how many targets, and a few of them to render.
    struct Match {
        let count: Int
        let sample: [Target]
    }

    func upsertRegistration(_ registration: Registration, id: String) throws(CompiledTemplate.Invalid) {
        let compiled = try registration.template.map { t throws(CompiledTemplate.Invalid) in
            try CompiledTemplate(body: t.body)
        }
        upsertRegistration(registration, id: id, compiled: compiled)
    }

    /// With the template already compiled (many simulated devices share one).
    func upsertRegistration(_ registration: Registration, id: String, compiled: CompiledTemplate?) {
        var stored = registration
        stored.id = id
        let format = compiled == nil ? registration.platform.rawValue : "template"
        state.withLock { s in
            s.removeTargets(of: "r:" + id)
            s.registrations[id] = stored
            s.etags[id] = s.nextETag
            s.nextETag += 1
            s.add(Target(format: format, tags: Set(registration.tags), template: compiled, owner: "r:" + id))
        }
    }

    func registration(id: String) -> Registration? { state.withLock { $0.registrations[id] } }

    /// The registration's current ETag, nil if there is none.
    func etag(id: String) -> Int? { state.withLock { $0.etags[id] } }

    func deleteRegistration(id: String) -> Bool {
        state.withLock { s in
            s.removeTargets(of: "r:" + id)
            s.etags[id] = nil
            return s.registrations.removeValue(forKey: id) != nil
        }
    }

    /// Every registration that `include` selects, ordered by id, with its ETag.
    func registrations(where include: (Registration) -> Bool) -> [(Registration, Int)] {
        state.withLock { s in
            s.registrations.values.filter(include).sorted { ($0.id ?? "") < ($1.id ?? "") }.map {
                ($0, s.etags[$0.id ?? ""] ?? 0)
            }
        }
    }

    /// Registrations carrying `tag`, ordered by id.
    func registrations(tag: String) -> [(Registration, Int)] {
        registrations { $0.tags.contains(tag) }
    }

    var registrationCount: Int { state.withLock { $0.registrations.count } }

    func upsertInstallation(_ installation: Installation) throws(CompiledTemplate.Invalid) {
        var templates: [(String, CompiledTemplate, Set<String>)] = []
        for (name, template) in (installation.templates ?? [:]).sorted(by: { $0.key < $1.key }) {
            templates.append((name, try CompiledTemplate(body: template.body), Set(template.tags ?? [])))
        }
        let owner = "i:" + installation.installationId
        // The system tags the service adds: the installation's id, and its user's when it has one.
        var baseTags = Set(installation.tags ?? []).union(["$InstallationId:{\(installation.installationId)}"])
        if let user = installation.userId { baseTags.insert("$UserId:{\(user)}") }
        state.withLock { s in
            s.removeTargets(of: owner)
            s.installations[installation.installationId] = installation
            s.add(
                Target(
                    format: PlatformFormat.format(ofInstallationPlatform: installation.platform),
                    tags: baseTags,
                    template: nil,
                    owner: owner
                )
            )
            for (_, compiled, tags) in templates {
                s.add(Target(format: "template", tags: baseTags.union(tags), template: compiled, owner: owner))
            }
        }
    }

    func installation(id: String) -> Installation? { state.withLock { $0.installations[id] } }

    func deleteInstallation(id: String) -> Bool {
        state.withLock { s in
            s.removeTargets(of: "i:" + id)
            return s.installations.removeValue(forKey: id) != nil
        }
    }

    /// The targets of `format` that `expression` selects (every one when it is nil).
    func match(format: String, expression: TagExpression?, sampleSize: Int) -> Match {
        state.withLock { s in
            let ids = expression.map { s.evaluate($0, format: format) } ?? s.universe[format] ?? []
            var sample: [Target] = []
            if sampleSize > 0 {
                for id in ids.prefix(sampleSize) { if let t = s.targets[id] { sample.append(t) } }
            }
            return Match(count: ids.count, sample: sample)
        }
    }
}

extension HubStore.State {
    mutating func add(_ target: Target) {
        let id = nextTarget
        nextTarget += 1
        targets[id] = target
        targetsByOwner[target.owner, default: []].append(id)
        universe[target.format, default: []].insert(id)
        for tag in target.tags { index[target.format, default: [:]][tag, default: []].insert(id) }
    }

    mutating func removeTargets(of owner: String) {
        for id in targetsByOwner.removeValue(forKey: owner) ?? [] {
            guard let target = targets.removeValue(forKey: id) else { continue }
            universe[target.format]?.remove(id)
            for tag in target.tags { index[target.format]?[tag]?.remove(id) }
        }
    }

    /// Set algebra over the index; a lone tag costs nothing (copy-on-write shares the set).
    func evaluate(_ e: TagExpression, format: String) -> Set<Int> {
        switch e {
        case .tag(let t): index[format]?[t] ?? []
        case .or(let operands): operands.reduce(into: Set<Int>()) { $0.formUnion(evaluate($1, format: format)) }
        case .and(let operands):
            operands.dropFirst().reduce(operands.first.map { evaluate($0, format: format) } ?? []) {
                $0.intersection(evaluate($1, format: format))
            }
        case .not(let inner): (universe[format] ?? []).subtracting(evaluate(inner, format: format))
        }
    }
}
