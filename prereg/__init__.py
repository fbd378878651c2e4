"""Pre-registrations: write, freeze, amend, verify, guard the launch, and compute the frozen reads.

Pure: never imports console/, engine/, MuJoCo or torch. Modules: `document` (format and
validation), `seal` (freeze/amend/verify), `launch` (resolve_launch for fontaine-eval),
`reads` (numbers from rows), `chart`, `report`, `cli`; the shared contracts `rows` and `gates`.
"""
