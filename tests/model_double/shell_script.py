"""The scripted model of the episodic GPT-w-Shell agent: an engineer behind AIOpsLab's shell-only
interface. Its first answer lists the pods of the namespace the problem names; its second submits
"Yes" when a pod of the `ad` workload is listed (it always is: the answer depends on the
observation reaching the model, not on the fault), "No" otherwise.
"""

from __future__ import annotations

import re

from .conversation import Conversation
from .script import Text, Turn


class ShellScript:
    def __call__(self, conv: Conversation) -> Turn:
        namespace = re.search(r"Namespace: (\S+)", conv.system)
        if namespace is None:
            return Text("I cannot tell which namespace to look at.")
        if not any("NAME" in text and "READY" in text for text in conv.user_texts):
            return Text(f'I will look at the pods first.\n```\nexec_shell("kubectl get pods -n {namespace.group(1)}")\n```')
        listed = conv.user_texts[-1]
        found = any(line.startswith("ad-") for line in listed.splitlines())
        return Text(f'```\nsubmit("{"Yes" if found else "No"}")\n```')
