"""A deterministic stand-in for Python's `random` module (the sandbox has none): the same calls and
the same argument checks as CPython 3.12's random.random / random.sample, drawn from a seed (the
request id) through sha256 so a request always gets the same answer."""

import hashlib


class Random:
    def __init__(self, seed):
        self.seed = str(seed)
        self.draws = 0

    def digest(self, label):
        return hashlib.sha256(f"{self.seed}:{self.draws}:{label}".encode()).hexdigest()

    def random(self):
        self.draws = self.draws + 1
        return int(self.digest("r")[:13], 16) / float(16 ** 13)

    def sample(self, population, k):
        """random.sample: a sequence only (sets raise since 3.11), k distinct positions."""
        try:  # a set or a dict is no sequence
            population[0] if len(population) else None
        except (TypeError, KeyError):
            raise TypeError("Population must be a sequence.  For dicts or sets, use sorted(d).")
        items = list(population)
        if k < 0 or k > len(items):
            raise ValueError("Sample larger than population or is negative")
        self.draws = self.draws + 1
        order = sorted(range(len(items)), key=lambda i: self.digest(i))
        return [items[i] for i in order[:k]]
