from attune_trainer.cli import main

raise SystemExit(main())
