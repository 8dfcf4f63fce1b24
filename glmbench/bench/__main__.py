from glmbench.bench import main

raise SystemExit(main())
