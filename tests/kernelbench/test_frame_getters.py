"""The stack walk looks through a library function that only hands its caller its own frame (watch.py,
`FRAME_GETTERS`: logging.currentframe), and not through logging as a whole: a candidate that asks for its frame
that way is `introspection`, one that logs is not."""

from tests.kb_helpers import judged_in_order

LOGS = '''import logging
import torch
import torch.nn as nn

log = logging.getLogger("candidate")

class ModelNew(nn.Module):
    def forward(self, x):
        log.warning("fast path taken")  # logging names the caller through its own currentframe()
        return torch.relu(x)
'''

ASKS_FOR_ITS_FRAME = '''import logging
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def forward(self, x):
        try:
            logging.currentframe().f_back
        except Exception:
            pass
        return torch.relu(x)
'''


def test_a_candidate_that_logs_is_judged_on_its_outputs(tmp_path):
    ((ok, reason), _, _), = judged_in_order(tmp_path, {"logs": LOGS})
    assert ok, reason


def test_a_frame_asked_of_logging_by_the_candidate_is_introspection(tmp_path):
    ((ok, reason), _, _), = judged_in_order(tmp_path, {"asks": ASKS_FOR_ITS_FRAME})
    assert not ok and reason.startswith("introspection"), reason
