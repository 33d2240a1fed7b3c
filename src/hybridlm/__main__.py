from hybridlm.cli import main

raise SystemExit(main())
