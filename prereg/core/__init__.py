"""The ground floor of prereg/: the error root and exit codes (`errors`), bounded reads of regular
files (`safe_read`), the shared vocabulary and limits, command-line number checks (`argcheck`), YAML
with line numbers (`yamlpos`), the webhook-variable scrubbing (`webhook_env`), the video-draw plan
(`video_draw`) and the arm colours. Imports nothing of the project outside itself."""
