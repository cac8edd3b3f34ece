"""What one request may ask of the trainer (README "Limits"). A request over a limit gets a 4xx
that names the field; the numbers are generous for RLVER dialogues and bound a shared GPU host's
memory and time per request."""

MIB = 1 << 20
STEP_BODY_BYTES = 64 * MIB  # POST /v1/runs/{run_id}/steps: a step's samples
CHAT_BODY_BYTES = 1 * MIB  # POST /v1/chat/completions
OTHER_BODY_BYTES = 1 * MIB  # every other request

MESSAGES = 256  # messages in one chat request or one sample's prompt
MESSAGE_CHARS = 256 * 1024  # characters of one message's text
MESSAGE_PARTS = 256  # content parts of one message (OpenAI's list form)
ROLE_CHARS = 64
MODEL_CHARS = 256  # `run` or `run@step`
STOP_STRINGS = 16
STOP_CHARS = 256
CHOICES = 64  # n


def body_limit(method: str, path: str) -> int:
    if method == "POST" and path.startswith("/v1/runs/") and path.endswith("/steps"):
        return STEP_BODY_BYTES
    if method == "POST" and path == "/v1/chat/completions":
        return CHAT_BODY_BYTES
    return OTHER_BODY_BYTES
